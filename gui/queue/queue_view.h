// QueueView: the Queue tab: enqueue the shown config or a grid over up to two of its fields.
#pragma once

#include <vector>

#include <QString>
#include <QStringList>
#include <QWidget>

#include "trainbench/config_grid.h"
#include "trainbench/run_config.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;

namespace trainbench::gui {

class RunQueue;

// The view edits the queue; the window runs it (startRequested / stopRequested) and tells
// the view whether it is running (setQueueRunning). Widgets carry object names for tests:
// enqueueButton, gridField1, gridValues1, gridField2, gridValues2, keepGlobalBatch,
// enqueueGridButton, gridMessage, queueTable, startQueueButton, removeButton, clearButton,
// compareButton, queueStatus.
class QueueView : public QWidget {
    Q_OBJECT

public:
    explicit QueueView(QWidget* parent = nullptr);

    RunQueue* queue() const { return queue_; }

    // The config that Enqueue takes and grids start from, and its name.
    void setBaseConfig(const RunConfig& config, const QString& config_name);

    // Appends the shown config as one job.
    void enqueueShownConfig();
    // Appends every point of the grid, or none: false, with the reason on gridMessage.
    bool enqueueGrid(const std::vector<GridAxis>& axes, bool keep_global_batch);
    // The grid of the editors.
    bool enqueueEditedGrid();
    QString gridMessage() const;

    void setQueueRunning(bool running);
    bool isQueueRunning() const { return running_; }

    // "tiny" for "configs/tiny.json"; any other name as it is.
    static QString runNameOf(const QString& config_name);

Q_SIGNALS:
    void startRequested();
    // Let the running job finish, start no other.
    void stopRequested();
    void compareRequested(const QStringList& run_ids);
    void queueRunningChanged(bool running);

private:
    void showMessage(const QString& text, bool error);
    void updateControls();

    RunQueue* queue_ = nullptr;
    RunConfig base_config_;
    QString base_name_;
    bool running_ = false;

    QComboBox* field1_ = nullptr;
    QLineEdit* values1_ = nullptr;
    QComboBox* field2_ = nullptr;
    QLineEdit* values2_ = nullptr;
    QCheckBox* keep_global_batch_ = nullptr;
    QLabel* message_ = nullptr;
    QTableView* table_ = nullptr;
    QPushButton* start_button_ = nullptr;
    QPushButton* remove_button_ = nullptr;
    QPushButton* clear_button_ = nullptr;
    QPushButton* compare_button_ = nullptr;
    QLabel* status_ = nullptr;
};

}  // namespace trainbench::gui
