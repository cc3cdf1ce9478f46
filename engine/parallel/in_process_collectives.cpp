// In-process collectives: a generation-counted rendezvous; the last rank to arrive does the work.
#include "parallel/in_process_collectives.h"

#include <cstdio>

namespace trainbench {

CollectiveHub::CollectiveHub(int world_size, std::chrono::milliseconds timeout, std::function<bool()> paused)
    : world_size_(world_size), timeout_(timeout), paused_(std::move(paused)), deposits_(world_size, nullptr) {}

void CollectiveHub::exchange(int rank, std::vector<torch::Tensor>& tensors, ReduceOp op, int root, bool is_broadcast) {
    std::unique_lock lock(mutex_);
    if (aborted_) throw CollectiveAborted(abort_reason_);
    const int64_t my_generation = generation_;
    deposits_[rank] = &tensors;
    if (++arrived_ == world_size_) {
        torch::NoGradGuard no_grad;
        const size_t count = tensors.size();
        for (size_t i = 0; i < count; ++i) {
            torch::Tensor result;
            if (is_broadcast) {
                result = (*deposits_[root])[i].clone();
            } else {
                // Rank order, one thread: the same inputs always give the same bits.
                result = (*deposits_[0])[i].clone();
                for (int r = 1; r < world_size_; ++r) {
                    const auto& other = (*deposits_[r])[i];
                    if (op == ReduceOp::Sum) result.add_(other);
                    else result = torch::maximum(result, other);
                }
            }
            for (int r = 0; r < world_size_; ++r) (*deposits_[r])[i].copy_(result);
        }
        arrived_ = 0;
        std::fill(deposits_.begin(), deposits_.end(), nullptr);
        ++generation_;
        changed_.notify_all();
        return;
    }
    bool done = false;
    while (true) {
        done = changed_.wait_for(lock, timeout_, [&] { return generation_ != my_generation || aborted_; });
        if (done || !paused_ || !paused_()) break;  // paused: the deadline starts over
    }
    if (generation_ != my_generation) return;
    if (!done && !aborted_) {
        aborted_ = true;
        std::string missing;
        int missing_count = 0;
        for (int r = 0; r < world_size_; ++r)
            if (!deposits_[r]) {
                missing += (missing.empty() ? "" : ", ") + std::to_string(r);
                ++missing_count;
            }
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", timeout_.count() / 1000.0);
        abort_reason_ = (missing_count == 1 ? "rank " : "ranks ") + missing +
                        " did not reach a collective within runtime.comm_timeout_s (" + seconds +
                        " s): stalled or hung; the other ranks stopped";
        changed_.notify_all();
    }
    throw CollectiveAborted(abort_reason_);
}

void CollectiveHub::abort(const std::string& reason) {
    std::lock_guard lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
    abort_reason_ = reason;
    changed_.notify_all();
}

void InProcessCollectives::allReduce(std::vector<torch::Tensor>& tensors, ReduceOp op) {
    ++calls_;
    if (world_size_ == 1) return;
    hub_->exchange(rank_, tensors, op, 0, false);
}

void InProcessCollectives::broadcast(std::vector<torch::Tensor>& tensors, int root) {
    ++calls_;
    if (world_size_ == 1) return;
    hub_->exchange(rank_, tensors, ReduceOp::Sum, root, true);
}

void InProcessCollectives::barrier() {
    ++calls_;
    if (world_size_ == 1) return;
    std::vector<torch::Tensor> none;
    hub_->exchange(rank_, none, ReduceOp::Sum, 0, false);
}

}  // namespace trainbench
