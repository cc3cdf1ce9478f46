// InProcessCollectives: collectives for rank threads of one process, through shared memory.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "comm/collectives.h"

namespace trainbench {

// The meeting point of W rank threads. Every collective is a rendezvous: each rank deposits
// its tensors; the last to arrive reduces them in rank order (so results are bitwise
// reproducible) and writes the result into every rank's tensors; then all ranks leave.
class CollectiveHub {
public:
    enum class Kind { AllReduce, Broadcast, ReduceScatter, AllGather, AllToAll };
    // `paused` (may be null) holds the timeout off: a rank waiting for ranks held at the pause
    // gate is not a hang.
    CollectiveHub(int world_size, std::chrono::milliseconds timeout, std::function<bool()> paused = {});
    // All-reduce and broadcast: `tensors` are the rank's tensors, reduced or overwritten in
    // place. Reduce-scatter and all-gather: `tensors` is {input, output}; all-to-all: {input,
    // output, input splits (int64 [W] on the CPU)}.
    void exchange(int rank, std::vector<torch::Tensor>& tensors, Kind kind, ReduceOp op = ReduceOp::Sum, int root = 0);
    // Aborts this hub and every hub linked to it: a rank failing in one group's collective
    // (expert parallelism has three) releases the ranks waiting in the others.
    void abort(const std::string& reason);
    static void link(const std::shared_ptr<CollectiveHub>& a, const std::shared_ptr<CollectiveHub>& b);

private:
    const int world_size_;
    const std::chrono::milliseconds timeout_;
    std::function<bool()> paused_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::vector<torch::Tensor>*> deposits_;
    int arrived_ = 0;
    int64_t generation_ = 0;
    bool aborted_ = false;
    std::string abort_reason_;
    std::vector<std::weak_ptr<CollectiveHub>> linked_;  // guarded by mutex_
};

// One rank's collectives. Calls run in order on the rank's own communication thread (started
// at the first call), so an asynchronous all-reduce proceeds while the rank computes, and a
// synchronous call simply waits for its turn: every rank's calls meet in the same order.
class InProcessCollectives : public Collectives {
public:
    InProcessCollectives(std::shared_ptr<CollectiveHub> hub, int rank, int world_size)
        : hub_(std::move(hub)), rank_(rank), world_size_(world_size) {}
    ~InProcessCollectives() override;
    int rank() const override { return rank_; }
    int worldSize() const override { return world_size_; }
    void allReduce(std::vector<torch::Tensor>& tensors, ReduceOp op) override;
    std::shared_ptr<CollectiveWork> allReduceAsync(std::vector<torch::Tensor> tensors, ReduceOp op) override;
    std::shared_ptr<CollectiveWork> reduceScatterAsync(torch::Tensor input, torch::Tensor output) override;
    std::shared_ptr<CollectiveWork> allGatherAsync(torch::Tensor input, torch::Tensor output) override;
    void allToAll(const torch::Tensor& input, torch::Tensor& output, const std::vector<int64_t>& input_splits,
                  const std::vector<int64_t>& output_splits) override;
    void broadcast(std::vector<torch::Tensor>& tensors, int root) override;
    void barrier() override;
    void abort(const std::string& reason) override { hub_->abort(reason); }

private:
    class Call;
    // Queues a call for the communication thread; a single rank completes it at once.
    std::shared_ptr<Call> submit(std::vector<torch::Tensor> tensors, CollectiveHub::Kind kind, ReduceOp op = ReduceOp::Sum,
                                 int root = 0);
    void serve();

    std::shared_ptr<CollectiveHub> hub_;
    int rank_, world_size_;
    std::mutex queue_mutex_;
    std::condition_variable queue_changed_;
    std::deque<std::shared_ptr<Call>> queue_;
    bool closing_ = false;
    std::thread worker_;
};

}  // namespace trainbench
