// Collectives: the one interface through which ranks reduce, broadcast and abort together.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace trainbench {

enum class ReduceOp { Sum, Max };

// Thrown on every rank whose collective was aborted (another rank failed) or timed out.
class CollectiveAborted : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Thrown where a collective failed because a rank is gone (killed, stopped, unreachable): a
// failure even while a stop is under way, since the lost rank cannot take part in it.
class RankLost : public CollectiveAborted {
public:
    using CollectiveAborted::CollectiveAborted;
};

// The reason a rank aborts its collectives with when it stops at a boundary (not a failure): a
// rank in another process that is released by it stops too (see RemoteAbortHandler).
inline constexpr char kStopRequested[] = "stop requested";

// Called, on the watcher's thread, with the reason another process's rank raised, before this
// rank's waits are released: the session learns of a stop there before the trainer asks.
using RemoteAbortHandler = std::function<void(const std::string& reason)>;

// A collective in flight. wait() returns once it has completed (its tensors then hold the
// result) and throws CollectiveAborted when it was aborted or timed out.
class CollectiveWork {
public:
    virtual ~CollectiveWork() = default;
    virtual void wait() = 0;
};

// Calls on one rank complete in the order they were made, whether synchronous or not: every
// rank must make the same calls in the same order.
class Collectives {
public:
    virtual ~Collectives() = default;
    virtual int rank() const = 0;
    virtual int worldSize() const = 0;
    // Reduces every tensor in place across ranks (same shapes and dtypes on every rank).
    virtual void allReduce(std::vector<torch::Tensor>& tensors, ReduceOp op) = 0;
    // The same, returning at once: the tensors must not be touched until wait() returns.
    virtual std::shared_ptr<CollectiveWork> allReduceAsync(std::vector<torch::Tensor> tensors, ReduceOp op) = 0;
    // Sharded state (runtime.zero_stage): `input` [W * n] is summed over ranks and rank r is
    // left slice r of the sum ([r * n, (r + 1) * n)) in `output` [n], which may be that very
    // slice of `input`. Returns at once, like allReduceAsync.
    virtual std::shared_ptr<CollectiveWork> reduceScatterAsync(torch::Tensor input, torch::Tensor output) = 0;
    // Every rank's `input` [n] in rank order into every rank's `output` [W * n]; `input` may be
    // this rank's slice of `output`.
    virtual std::shared_ptr<CollectiveWork> allGatherAsync(torch::Tensor input, torch::Tensor output) = 0;
    // Expert parallelism's exchange: rank r sends rows [o_d, o_d + input_splits[d]) of `input`
    // (o_d the sum of the splits before d) to rank d, and receives into `output`, in rank order,
    // output_splits[s] rows from each rank s. Every rank's input_splits[d] must equal rank d's
    // output_splits[r]; rows are the first dimension, the rest of the shape alike everywhere.
    // Synchronous: its result is needed by the next operator.
    virtual void allToAll(const torch::Tensor& input, torch::Tensor& output, const std::vector<int64_t>& input_splits,
                          const std::vector<int64_t>& output_splits) = 0;
    // Copies root's tensors into every rank's tensors.
    virtual void broadcast(std::vector<torch::Tensor>& tensors, int root) = 0;
    virtual void barrier() = 0;
    // Makes every pending and future call on every rank throw CollectiveAborted(reason).
    virtual void abort(const std::string& reason) = 0;

    // Calls made by this rank (all-reduces, reduce-scatters, all-gathers, broadcasts,
    // barriers), for tests and metrics.
    int64_t calls() const { return calls_.load(); }
    // Seconds this rank spent in allToAll calls, the wait for the slowest rank of the group
    // included (expert parallelism's cost: perf/all_to_all_s).
    double allToAllSeconds() const { return double(all_to_all_ns_.load()) * 1e-9; }

protected:
    std::atomic<int64_t> calls_{0};
    std::atomic<int64_t> all_to_all_ns_{0};
};

}  // namespace trainbench
