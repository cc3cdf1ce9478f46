// RollCall: after a collective fails, which ranks are still there.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace trainbench {

// A failed collective says little: a closed connection or a timeout, with a peer's address at
// best. The ranks still alive answer in the rendezvous store (one key each); whoever has not
// answered within the grace period is lost (killed, stopped, or its machine unreachable).
// Every rank answers as soon as it learns of the failure (its own collective failed, or the
// abort signal reached it), so the grace is short next to a collective's timeout.
class RollCall {
public:
    explicit RollCall(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
    // Says that `rank` is alive. Never throws: a store that is gone has nobody to tell.
    void answer(int rank);
    // The ranks of [0, world_size) that have not answered within `grace`, in rank order; all of
    // them but `self` when the store itself cannot be reached.
    std::vector<int> missing(int world_size, int self, std::chrono::milliseconds grace);

private:
    c10::intrusive_ptr<c10d::Store> store_;
};

// "rank 1", "ranks 1 and 3", "ranks 1, 2 and 3".
std::string describeRanks(const std::vector<int>& ranks);

}  // namespace trainbench
