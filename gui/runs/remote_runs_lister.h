// RemoteRunsLister: the runs of a store on another machine, read with `ssh … trainbench-cli runs --json`.
#pragma once

#include <vector>

#include <QObject>
#include <QString>

#include "runs/remote_location.h"
#include "trainbench/run_store.h"

class QProcess;

namespace trainbench::gui {

// One listing at a time: refresh() while one runs is folded into it. The listing is what
// `runs --json` prints (id, name, status, steps, final loss, created, tags); a run's config and
// points come with its stream (RemoteRunSync).
class RemoteRunsLister : public QObject {
    Q_OBJECT

public:
    explicit RemoteRunsLister(RemoteLocation location, QObject* parent = nullptr);
    ~RemoteRunsLister() override;

    const RemoteLocation& location() const { return location_; }
    void refresh();
    bool isListing() const { return process_ != nullptr; }

    // The runs of `runs --json`'s output, newest first; throws std::runtime_error naming what
    // is wrong with it (a run id that is not a plain name among it).
    static std::vector<RunRecord> parseListing(const QByteArray& json);

Q_SIGNALS:
    void listed(const std::vector<trainbench::RunRecord>& runs);
    // Why the store could not be listed (the connection, ssh's refusal, the CLI's).
    void failed(const QString& message);

private:
    void onFinished(int exit_code, bool crashed);

    RemoteLocation location_;
    QProcess* process_ = nullptr;
};

}  // namespace trainbench::gui
