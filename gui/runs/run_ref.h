// RunRef: which store a run of the window's lists belongs to: the local one, or a store on another machine.
#pragma once

#include <optional>

#include <QString>

#include "runs/remote_location.h"

namespace trainbench::gui {

// The runs list, a selection and Compare name a run by one string: a local run by its id, a
// remote run by runRefKey ("remote:<location label>#<run id>"), so the views that pass ids
// along (selection, watch, compare) need not know where a run lives; what reads it resolves
// the key. A remote store opened in this window is remembered (rememberRemote) with its CLI
// path, which a key does not carry.
struct RunRef {
    QString run_id;
    std::optional<RemoteLocation> remote;  // empty: the local store

    bool isRemote() const { return remote.has_value(); }
    // The store folder the run is read from: `local_folder`, or the remote run's copy.
    QString folder(const QString& local_folder) const;
};

QString runRefKey(const RemoteLocation& location, const QString& run_id);
// A key of runRefKey, or a local run's id. A remote key whose location does not parse (it
// cannot come from this window) is taken as a local id.
RunRef resolveRunRef(const QString& key);
// The location of a remote store this window has opened: resolveRunRef gives it back.
void rememberRemote(const RemoteLocation& location);

}  // namespace trainbench::gui
