// OffloadChoice: the Memory layout box's "Offload:" row: where each rank's AdamW moments (and under "all" its weights' shard) live between steps (runtime.offload, runtime.offload_dir).
#pragma once

#include <cstdint>

#include <QString>
#include <QWidget>

#include "trainbench/run_config.h"
#include "trainbench/target_machine.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QToolButton;

namespace trainbench::gui {

// Five choices, each with the device peak it would plan on the config's target (the others as
// the config has them):
// - on the device (runtime.offload none);
// - optimizer → host memory (offload optimizer, offload_dir empty);
// - optimizer → disk (offload optimizer, offload_dir a directory: the NVMe tier). Its directory
//   is edited in the line beside it (or picked with the folder button); choosing the tier with no
//   directory yet takes the last one used here, or the system's temporary directory;
// - all → host memory and all → disk (offload all: the weights' shard too), at ZeRO stage 3 only
//   (only stage 3 shards the weights).
// Each choice and each directory typed is one offloadRequested; the owner applies it (undoably)
// and hands the panel the config back on refusal or undo.
//
// The engine refuses offload optimizer below ZeRO stage 1, and offload all away from stage 3
// (validateRunConfig): then those choices are disabled and their tooltips say why and what to do.
//
// A note under the choice says what a user may not expect: a directory that does not exist (the
// session would refuse it at start), on the target's CPU ranks that host memory is the device's
// own memory.
//
// Widgets that tests drive carry object names: offloadCombo, offloadDirEdit, offloadDirButton,
// offloadNoteLabel.
class OffloadChoice : public QWidget {
    Q_OBJECT

public:
    enum Target { OnDevice = 0, HostMemory = 1, Disk = 2, AllHostMemory = 3, AllDisk = 4 };

    explicit OffloadChoice(QWidget* parent = nullptr);

    // Shows the config's choice and each choice's peak on `target` (planOnTarget).
    void setRunConfig(const RunConfig& config, const TargetMachine& target);
    // While a run is live nothing here can change.
    void setRunLive(bool live);

    static Target targetOf(const RuntimeConfig& runtime);
    // Why the engine would refuse runtime.offload optimizer with this config, and what to do, in
    // a sentence; empty when it would not.
    static QString refusal(const RunConfig& config);
    // The same for runtime.offload all (which even when valid does not train yet).
    static QString allRefusal(const RunConfig& config);
    // The note under the choice, for the owner to place as a row of its own (a wrapped line needs
    // the box's whole width).
    QLabel* noteLabel() const { return note_; }

Q_SIGNALS:
    void offloadRequested(const QString& offload, const QString& offload_dir);

private:
    void onChoiceEdited(int index);
    void onDirectoryEdited();
    void pickDirectory();
    void request(const QString& offload, const QString& offload_dir);
    void updateControls();
    void showNote();

    RunConfig config_;
    QString refusal_;
    QString all_refusal_;
    bool shared_memory_ = true;  // the target's ranks are CPU ranks: host memory is the device's
    bool run_live_ = false;
    QString last_directory_;  // the disk tier's last directory, offered when it is chosen again

    QComboBox* combo_ = nullptr;
    QWidget* directory_row_ = nullptr;
    QLineEdit* directory_edit_ = nullptr;
    QToolButton* directory_button_ = nullptr;
    QLabel* note_ = nullptr;
};

}  // namespace trainbench::gui
