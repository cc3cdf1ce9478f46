// DeviceCountDialog: the open config against 1, 2, 4 ... 64 devices of its target's kind, and the published configs' claims, each answered by the planner (DeviceCountModel).
#pragma once

#include <vector>

#include <QDialog>

#include "batch/device_count_table.h"
#include "trainbench/run_config.h"

class QLabel;
class QTableView;

namespace trainbench::gui {

// Opened from the batch panel ("By device count…"); computed when shown, in the GUI thread (a
// few hundred milliseconds for the largest configs). Non-modal: it keeps what it was computed for
// until shown again.
//
// Widgets that tests read carry object names: deviceCountDialog, deviceCountTitle,
// deviceCountTable, claimsTitle, claimsTable, claimsAnswerLabel (each claim's answer in a sentence).
class DeviceCountDialog : public QDialog {
    Q_OBJECT

public:
    explicit DeviceCountDialog(QWidget* parent = nullptr);

    // Rows for tableDeviceCounts() of `config` on its target's kind, and the claims of `published`.
    void showConfig(const RunConfig& config, const std::vector<PublishedConfig>& published);

    DeviceCountModel* countModel() const { return counts_; }
    DeviceCountModel* claimsModel() const { return claims_; }

private:
    DeviceCountModel* counts_ = nullptr;
    DeviceCountModel* claims_ = nullptr;
    QLabel* title_ = nullptr;
    QLabel* claims_title_ = nullptr;
    QLabel* claims_answer_ = nullptr;
    QTableView* counts_view_ = nullptr;
    QTableView* claims_view_ = nullptr;
};

}  // namespace trainbench::gui
