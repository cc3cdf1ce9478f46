// RunsModel: the runs of the store as a table (name, status, steps, final loss, created, tags), newest first.
#pragma once

#include <utility>
#include <vector>

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include "runs/remote_location.h"

#include "trainbench/run_store.h"

namespace trainbench::gui {

class StoreReader;

// refresh() reads the runs on a StoreReader's thread; the result is merged into the rows in
// place: dataChanged for a changed run, inserted rows for new ones, removed rows for deleted
// ones, and never a reset, so views keep their selection and scroll position.
class RunsModel : public QAbstractTableModel {
    Q_OBJECT

public:
    // Host: "local", or the host of a remote store's run (the panel shows it once one is open).
    enum Column { Name, Status, Steps, FinalLoss, Created, Tags, Host, ColumnCount };
    // RunIdRole: the run id of a row; SortRole: the raw value (number or ISO time) of a cell.
    enum Role { RunIdRole = Qt::UserRole + 1, SortRole };

    // `folder`: the store to read (RunStore::defaultFolder() when empty).
    explicit RunsModel(QString folder = QString(), QObject* parent = nullptr);
    ~RunsModel() override;

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // Reads the store again; refreshed() follows. A refresh asked for while one is in flight
    // is folded into a single one after it.
    void refresh();
    // Merges `runs` (newest first, as listRuns gives them) into the rows: the local store's.
    void setRuns(std::vector<RunRecord> runs);
    // The runs of a store on another machine, as its lister read them, shown beside the local
    // ones: each row's id is its runRefKey, its Host column the location's host.
    void setRemoteRuns(const RemoteLocation& location, std::vector<RunRecord> runs);
    // The remote stores shown (their labels), in the order opened.
    QStringList remoteLabels() const;

    const RunRecord& run(int row) const { return runs_.at(static_cast<size_t>(row)); }
    // The row of `run_id`, or -1.
    int rowOf(const QString& run_id) const;
    const QString& storeFolder() const;
    // The model's store reader: other queries of the same store (a run's checkpoints) are
    // posted there, in order with the refreshes.
    StoreReader* reader() const { return reader_; }
    // True once a refresh has delivered the store's runs.
    bool isLoaded() const { return loaded_once_; }

Q_SIGNALS:
    // The rows now match the store as read by the last refresh().
    void refreshed();
    void refreshFailed(const QString& message);

private:
    static bool sameRow(const RunRecord& a, const RunRecord& b);
    // Local and remote runs together, newest first, merged into the rows.
    void mergeRows();
    void merge(std::vector<RunRecord> runs);

    std::vector<RunRecord> runs_;  // the rows
    std::vector<RunRecord> local_;
    std::vector<std::pair<QString, std::vector<RunRecord>>> remote_;  // by location label, ids as keys
    StoreReader* reader_ = nullptr;
    bool loading_ = false;
    bool loaded_once_ = false;
    bool refresh_again_ = false;
};

}  // namespace trainbench::gui
