// RunFollower: one run of the store followed as it is written, as the records of the run stream.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace trainbench {

struct FollowOptions {
    std::string store_folder;
    std::string run_id;
    // Points and events of this step and after are sent (0 or 1: all of them).
    int64_t from_step = 0;
    // How often the store is read again while nothing ends the run.
    int poll_ms = 200;
    // An Alive record after this long without another, so the reader can tell a quiet run from
    // a dead connection, and the follower learns the reader has gone (its write fails).
    int alive_ms = 5000;
    // Quiet polls after which the store is opened afresh: opening it marks `interrupted` a run
    // whose writer died (RunStore's constructor), which a reader open all along never sees.
    int quiet_polls_before_owner_check = 10;
};

// Sends the header, the run, everything stored from `from_step` (points in commit order, each
// event after the points of its step), Live, then what is committed as it comes, until the run
// leaves `running`: its last points and events, then End with the run as stored. `write` takes
// each line and returns false when the reader has gone (following ends there, quietly);
// `stop` is asked between reads. Returns true when End was sent. Throws StoreError (the store
// cannot be read, the run is not in it).
bool followRun(const FollowOptions& options, const std::function<bool(const std::string& line)>& write,
               const std::function<bool()>& stop);

}  // namespace trainbench
