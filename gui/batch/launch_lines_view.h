// LaunchLinesView: how the ranks run, and the command lines that start them as processes.
#pragma once

#include <QString>
#include <QWidget>

#include "trainbench/launch_lines.h"
#include "trainbench/run_config.h"

class QLabel;
class QPushButton;

namespace trainbench::gui {

// The batch panel's Ranks row: "4 rank threads of one process on the CPU (run, Start). As
// processes, one per rank:" and the torchrun, two-machine and Slurm lines (launchLines), with
// a button that copies the lines. One rank: the sentence alone, no button.
class LaunchLinesView : public QWidget {
    Q_OBJECT
public:
    explicit LaunchLinesView(QWidget* parent = nullptr);
    // `config_file` is the file the lines name; empty: not saved yet (a placeholder and a hint).
    void showLines(const RunConfig& config, const QString& config_file);

private:
    QLabel* label_ = nullptr;
    QPushButton* copy_button_ = nullptr;
    LaunchLines lines_;  // what the label shows and the button copies
};

}  // namespace trainbench::gui
