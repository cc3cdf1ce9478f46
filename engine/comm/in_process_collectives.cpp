// In-process collectives: a generation-counted rendezvous; the last rank to arrive does the work.
#include "comm/in_process_collectives.h"

#include <cstdio>

namespace trainbench {

CollectiveHub::CollectiveHub(int world_size, std::chrono::milliseconds timeout, std::function<bool()> paused)
    : world_size_(world_size), timeout_(timeout), paused_(std::move(paused)), deposits_(world_size, nullptr) {}

namespace {

// The work of the last rank to arrive, over every rank's deposit; one thread, in rank order,
// so the same inputs always give the same bits. Results are computed before any rank's tensors
// are written: an output may be a slice of its rank's input.
void combine(const std::vector<std::vector<torch::Tensor>*>& deposits, CollectiveHub::Kind kind, ReduceOp op, int root) {
    using Kind = CollectiveHub::Kind;
    const int world = static_cast<int>(deposits.size());
    const size_t count = deposits[0]->size();
    for (int r = 1; r < world; ++r)
        if (deposits[r]->size() != count)
            throw std::runtime_error("ranks made different collective calls (" + std::to_string(count) +
                                     " tensors against " + std::to_string(deposits[r]->size()) + ")");
    if (kind == Kind::AllToAll) {
        if (count != 3) throw std::runtime_error("an all-to-all takes an input, an output and its splits");
        // Where each rank's rows for each destination begin.
        std::vector<std::vector<int64_t>> begin(world, std::vector<int64_t>(world + 1, 0));
        for (int s = 0; s < world; ++s) {
            const torch::Tensor& splits = (*deposits[s])[2];
            if (splits.numel() != world) throw std::runtime_error("an all-to-all's splits must name every rank");
            for (int d = 0; d < world; ++d) begin[s][d + 1] = begin[s][d] + splits.data_ptr<int64_t>()[d];
            if (begin[s][world] != (*deposits[s])[0].size(0))
                throw std::runtime_error("an all-to-all's input splits do not add up to its rows");
        }
        // Every output is written from the inputs, which no output aliases.
        for (int d = 0; d < world; ++d) {
            torch::Tensor& output = (*deposits[d])[1];
            int64_t row = 0;
            for (int s = 0; s < world; ++s) {
                const int64_t rows = begin[s][d + 1] - begin[s][d];
                if (row + rows > output.size(0))
                    throw std::runtime_error("an all-to-all's output splits do not match the inputs sent");
                if (rows > 0) output.narrow(0, row, rows).copy_((*deposits[s])[0].narrow(0, begin[s][d], rows));
                row += rows;
            }
            if (row != output.size(0)) throw std::runtime_error("an all-to-all's output has rows nobody sent");
        }
        return;
    }
    if (kind == Kind::ReduceScatter || kind == Kind::AllGather) {
        if (count != 2) throw std::runtime_error("a reduce-scatter or all-gather takes an input and an output");
        torch::Tensor full;
        if (kind == Kind::ReduceScatter) {
            full = (*deposits[0])[0].clone();
            for (int r = 1; r < world; ++r) full.add_((*deposits[r])[0]);
        } else {
            std::vector<torch::Tensor> pieces;
            for (int r = 0; r < world; ++r) pieces.push_back((*deposits[r])[0]);
            full = torch::cat(pieces);
        }
        for (int r = 0; r < world; ++r) {
            torch::Tensor& output = (*deposits[r])[1];
            const int64_t n = output.numel();
            if (full.numel() != (kind == Kind::ReduceScatter ? n * world : n))
                throw std::runtime_error("a reduce-scatter or all-gather with sizes that do not match the world size");
            output.copy_(kind == Kind::ReduceScatter ? full.narrow(0, r * n, n) : full);
        }
        return;
    }
    for (size_t i = 0; i < count; ++i) {
        torch::Tensor result;
        if (kind == Kind::Broadcast) {
            result = (*deposits[root])[i].clone();
        } else {
            result = (*deposits[0])[i].clone();
            for (int r = 1; r < world; ++r) {
                const auto& other = (*deposits[r])[i];
                if (op == ReduceOp::Sum) result.add_(other);
                else result = torch::maximum(result, other);
            }
        }
        for (int r = 0; r < world; ++r) (*deposits[r])[i].copy_(result);
    }
}

}  // namespace

void CollectiveHub::exchange(int rank, std::vector<torch::Tensor>& tensors, Kind kind, ReduceOp op, int root) {
    std::unique_lock lock(mutex_);
    if (aborted_) throw CollectiveAborted(abort_reason_);
    const int64_t my_generation = generation_;
    deposits_[rank] = &tensors;
    if (++arrived_ == world_size_) {
        torch::NoGradGuard no_grad;
        try {
            combine(deposits_, kind, op, root);
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
    std::vector<std::weak_ptr<CollectiveHub>> linked;
    {
        std::lock_guard lock(mutex_);
        if (aborted_) return;
        aborted_ = true;
        abort_reason_ = reason;
        changed_.notify_all();
        linked = linked_;
    }
    // After this hub's lock is released: a linked hub aborting back finds it aborted already.
    for (auto& weak : linked)
        if (auto hub = weak.lock()) hub->abort(reason);
}

void CollectiveHub::link(const std::shared_ptr<CollectiveHub>& a, const std::shared_ptr<CollectiveHub>& b) {
    {
        std::lock_guard lock(a->mutex_);
        a->linked_.push_back(b);
    }
    std::lock_guard lock(b->mutex_);
    b->linked_.push_back(a);
}

class InProcessCollectives::Call : public CollectiveWork {
public:
    Call(std::vector<torch::Tensor> tensors, CollectiveHub::Kind kind, ReduceOp op, int root)
        : tensors(std::move(tensors)), kind(kind), op(op), root(root) {}
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
    const CollectiveHub::Kind kind;
    const ReduceOp op;
    const int root;

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

std::shared_ptr<InProcessCollectives::Call> InProcessCollectives::submit(std::vector<torch::Tensor> tensors,
                                                                         CollectiveHub::Kind kind, ReduceOp op, int root) {
    ++calls_;
    auto call = std::make_shared<Call>(std::move(tensors), kind, op, root);
    if (world_size_ == 1) {
        // One rank: the reduction is the input itself; a scatter or gather is a copy (none
        // when the output is the input).
        if ((kind == CollectiveHub::Kind::ReduceScatter || kind == CollectiveHub::Kind::AllGather) &&
            !call->tensors[1].is_same(call->tensors[0])) {
            torch::NoGradGuard no_grad;
            call->tensors[1].copy_(call->tensors[0]);
        }
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
        // The results are in the caller's tensors (shared storage). This thread's handles to them
        // go before the caller wakes: a buffer the caller frees at once is then freed at once, not
        // whenever this thread runs next (a rank's memory peak would depend on the scheduler).
        std::exception_ptr error;
        try {
            hub_->exchange(rank_, call->tensors, call->kind, call->op, call->root);
        } catch (...) {
            error = std::current_exception();
        }
        call->tensors.clear();
        call->finish(error);
    }
}

void InProcessCollectives::allReduce(std::vector<torch::Tensor>& tensors, ReduceOp op) {
    // The call holds the same tensors (shared storage), so the result lands in the caller's.
    submit(tensors, CollectiveHub::Kind::AllReduce, op)->wait();
}

std::shared_ptr<CollectiveWork> InProcessCollectives::allReduceAsync(std::vector<torch::Tensor> tensors, ReduceOp op) {
    return submit(std::move(tensors), CollectiveHub::Kind::AllReduce, op);
}

std::shared_ptr<CollectiveWork> InProcessCollectives::reduceScatterAsync(torch::Tensor input, torch::Tensor output) {
    return submit({std::move(input), std::move(output)}, CollectiveHub::Kind::ReduceScatter);
}

std::shared_ptr<CollectiveWork> InProcessCollectives::allGatherAsync(torch::Tensor input, torch::Tensor output) {
    return submit({std::move(input), std::move(output)}, CollectiveHub::Kind::AllGather);
}

void InProcessCollectives::allToAll(const torch::Tensor& input, torch::Tensor& output,
                                    const std::vector<int64_t>& input_splits, const std::vector<int64_t>& output_splits) {
    int64_t expected = 0;
    for (int64_t rows : output_splits) expected += rows;
    if (static_cast<int>(input_splits.size()) != world_size_ || static_cast<int>(output_splits.size()) != world_size_ ||
        expected != output.size(0))
        throw std::invalid_argument("allToAll: one split per rank, and the output's rows their sum");
    const auto start = std::chrono::steady_clock::now();
    if (world_size_ == 1) {
        ++calls_;
        torch::NoGradGuard no_grad;
        output.copy_(input);
    } else {
        auto splits = torch::tensor(input_splits, torch::kInt64);
        submit({input, output, splits}, CollectiveHub::Kind::AllToAll)->wait();
    }
    all_to_all_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

void InProcessCollectives::broadcast(std::vector<torch::Tensor>& tensors, int root) {
    submit(tensors, CollectiveHub::Kind::Broadcast, ReduceOp::Sum, root)->wait();
}

void InProcessCollectives::barrier() { submit({}, CollectiveHub::Kind::AllReduce)->wait(); }

}  // namespace trainbench
