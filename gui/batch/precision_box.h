// PrecisionBox: the batch panel's precision table: for fp32, bf16, fp8 and fp8 with bf16 moments, the planned peak at the config's m and the largest m that fits the target, the config's own marked, each one click (one undoable edit) away.
#pragma once

#include <array>
#include <string>

#include <QGroupBox>
#include <QString>

#include "common/precision_fits.h"
#include "trainbench/run_config.h"
#include "trainbench/target_machine.h"

class QButtonGroup;
class QLabel;
class QRadioButton;

namespace trainbench::gui {

// The rows are planPrecisions' on the config's target (precisionFitsOnTarget): fp32, bf16, fp8,
// fp8 with bf16 moments, and the config's own precision after them when it is none of those
// (fp32 with bf16 moments). Each row: its name, the peak at the config's m, the largest m that
// fits the target's device budget and that m's change against the config's own row ("+31 %").
// Each row's name is a radio button: the config's own is checked (and its row bold); clicking
// another asks for its runtime.dtype and runtime.optimizer_dtype with precisionRequested, which
// the owner applies as one undoable edit (or hands the panel its config back). Planning is
// arithmetic: the box plans on the GUI thread, at every setRunConfig, as the panel's other
// choices do.
//
// Widgets that tests drive carry object names: precisionBox, precisionChoice<i> (the radio
// button), precisionPeak<i>, precisionLargest<i>, precisionChange<i> (i: the row, from 0),
// precisionNoteLabel.
class PrecisionBox : public QGroupBox {
    Q_OBJECT

public:
    static constexpr int kRows = 5;  // planPrecisions' four and the config's own when it is another

    explicit PrecisionBox(QWidget* parent = nullptr);

    void setRunConfig(const RunConfig& config, const TargetMachine& target);
    // While a run is live nothing here can change.
    void setRunLive(bool live);
    const PrecisionFits& fits() const { return fits_; }
    // Asks for row `row`'s precision (precisionRequested); false when there is no such row, it is
    // the config's own, or a run is live.
    bool choose(int row);

Q_SIGNALS:
    void precisionRequested(const QString& dtype, const QString& optimizer_dtype);

private:
    void updateControls();
    // The config's own row checked, whatever was clicked.
    void showCurrent();

    struct Row {
        QRadioButton* choice = nullptr;
        QLabel* peak = nullptr;
        QLabel* largest = nullptr;
        QLabel* change = nullptr;
    };

    RunConfig config_;
    PrecisionFits fits_;
    bool run_live_ = false;
    std::array<Row, kRows> rows_;
    QButtonGroup* group_ = nullptr;
    QLabel* largest_header_ = nullptr;
    QLabel* note_ = nullptr;
};

}  // namespace trainbench::gui
