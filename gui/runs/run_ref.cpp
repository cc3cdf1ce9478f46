// RunRef: run keys of the window's lists, local or remote.
#include "runs/run_ref.h"

#include <QHash>

namespace trainbench::gui {
namespace {

const QString kRemotePrefix = QStringLiteral("remote:");

// The remote stores opened in this process, by label: the GUI thread's only.
QHash<QString, RemoteLocation>& openedRemotes() {
    static QHash<QString, RemoteLocation> remotes;
    return remotes;
}

}  // namespace

QString RunRef::folder(const QString& local_folder) const {
    return remote ? remote->cacheFolder() : local_folder;
}

QString runRefKey(const RemoteLocation& location, const QString& run_id) {
    return kRemotePrefix + location.label() + QLatin1Char('#') + run_id;
}

RunRef resolveRunRef(const QString& key) {
    if (!key.startsWith(kRemotePrefix)) return {key, std::nullopt};
    // Generated run ids hold no '#'; a path may.
    const qsizetype hash = key.lastIndexOf(QLatin1Char('#'));
    if (hash < 0) return {key, std::nullopt};
    const QString label = key.mid(kRemotePrefix.size(), hash - kRemotePrefix.size());
    const QString run_id = key.mid(hash + 1);
    if (const auto it = openedRemotes().constFind(label); it != openedRemotes().constEnd()) return {run_id, *it};
    std::optional<RemoteLocation> location = RemoteLocation::parse(label, nullptr);
    if (!location) return {key, std::nullopt};
    return {run_id, location};
}

void rememberRemote(const RemoteLocation& location) {
    openedRemotes().insert(location.label(), location);
}

}  // namespace trainbench::gui
