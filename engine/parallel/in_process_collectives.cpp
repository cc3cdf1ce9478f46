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
        try {
            for (size_t r = 1; r < deposits_.size(); ++r)
                if (deposits_[r]->size() != count)
                    throw std::runtime_error("ranks made different collective calls (" + std::to_string(count) +
                                             " tensors against " + std::to_string(deposits_[r]->size()) + ")");
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
        } catch (const std::exception& e) {
            // Mismatched calls (a bug) or a failed reduction: every rank is told, none waits on.
            aborted_ = true;
            abort_reason_ = std::string("a collective failed: ") + e.what();
            arrived_ = 0;
            std::fill(deposits_.begin(), deposits_.end(), nullptr);
            changed_.notify_all();
            throw CollectiveAborted(abort_reason_);
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

class InProcessCollectives::Call : public CollectiveWork {
public:
    Call(std::vector<torch::Tensor> tensors, ReduceOp op, int root, bool is_broadcast)
        : tensors(std::move(tensors)), op(op), root(root), is_broadcast(is_broadcast) {}
    void wait() override {
        std::unique_lock lock(mutex_);
        finished_.wait(lock, [&] { return done_; });
        if (error_) std::rethrow_exception(error_);
    }
    void finish(std::exception_ptr error) {
        std::lock_guard lock(mutex_);
        error_ = std::move(error);
        done_ = true;
        finished_.notify_all();
    }

    std::vector<torch::Tensor> tensors;
    const ReduceOp op;
    const int root;
    const bool is_broadcast;

private:
    std::mutex mutex_;
    std::condition_variable finished_;
    bool done_ = false;
    std::exception_ptr error_;
};

InProcessCollectives::~InProcessCollectives() {
    {
        std::lock_guard lock(queue_mutex_);
        closing_ = true;
    }
    queue_changed_.notify_all();
    // Calls still queued are served first: they end at once when the hub was aborted (a failed
    // rank), or within the timeout otherwise.
    if (worker_.joinable()) worker_.join();
}

std::shared_ptr<InProcessCollectives::Call> InProcessCollectives::submit(std::vector<torch::Tensor> tensors, ReduceOp op,
                                                                         int root, bool is_broadcast) {
    ++calls_;
    auto call = std::make_shared<Call>(std::move(tensors), op, root, is_broadcast);
    if (world_size_ == 1) {
        call->finish(nullptr);
        return call;
    }
    {
        std::lock_guard lock(queue_mutex_);
        if (!worker_.joinable()) worker_ = std::thread([this] { serve(); });
        queue_.push_back(call);
    }
    queue_changed_.notify_one();
    return call;
}

void InProcessCollectives::serve() {
    while (true) {
        std::shared_ptr<Call> call;
        {
            std::unique_lock lock(queue_mutex_);
            queue_changed_.wait(lock, [&] { return closing_ || !queue_.empty(); });
            if (queue_.empty()) return;
            call = std::move(queue_.front());
            queue_.pop_front();
        }
        try {
            hub_->exchange(rank_, call->tensors, call->op, call->root, call->is_broadcast);
            call->finish(nullptr);
        } catch (...) {
            call->finish(std::current_exception());
        }
    }
}

void InProcessCollectives::allReduce(std::vector<torch::Tensor>& tensors, ReduceOp op) {
    // The call holds the same tensors (shared storage), so the result lands in the caller's.
    submit(tensors, op, 0, false)->wait();
}

std::shared_ptr<CollectiveWork> InProcessCollectives::allReduceAsync(std::vector<torch::Tensor> tensors, ReduceOp op) {
    return submit(std::move(tensors), op, 0, false);
}

void InProcessCollectives::broadcast(std::vector<torch::Tensor>& tensors, int root) {
    submit(tensors, ReduceOp::Sum, root, true)->wait();
}

void InProcessCollectives::barrier() { submit({}, ReduceOp::Sum, 0, false)->wait(); }

}  // namespace trainbench
