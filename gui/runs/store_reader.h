// StoreReader: runs queries of the run store on a thread of its own and hands their results to the GUI thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <QMetaObject>
#include <QObject>
#include <QString>

#include "trainbench/run_store.h"

namespace trainbench::gui {

// Thread contract:
// - The reader lives on the GUI thread; post() and the destructor are called there, and
//   every result callback and signal runs there. The GUI thread never touches SQLite.
// - One query thread per reader owns the reader's only RunStore (one RunStore per thread),
//   opened at the first query, so a missing or broken store costs the GUI nothing.
// - Queries run one at a time in the order posted. A result whose reader has died is
//   dropped: queued calls die with their context object.
// - The destructor drops the queries not yet started and joins the one running.
class StoreReader : public QObject {
    Q_OBJECT

public:
    explicit StoreReader(QString folder, QObject* parent = nullptr);
    ~StoreReader() override;

    const QString& folder() const { return folder_; }

    // Runs `query` on the query thread, then `deliver` with its result on the GUI thread.
    // An exception from the store or the query is reported with failed() instead.
    template <typename Result>
    void post(std::function<Result(RunStore&)> query, std::function<void(Result)> deliver) {
        enqueue([this, query = std::move(query), deliver = std::move(deliver)](RunStore& store) {
            auto result = std::make_shared<Result>(query(store));
            QMetaObject::invokeMethod(
                this, [deliver, result] { deliver(std::move(*result)); }, Qt::QueuedConnection);
        });
    }

Q_SIGNALS:
    void failed(const QString& message);

private:
    using Task = std::function<void(RunStore&)>;
    void enqueue(Task task);
    void serve();

    QString folder_;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Task> tasks_;  // guarded by mutex_
    bool stopping_ = false;   // guarded by mutex_
};

}  // namespace trainbench::gui
