// NCCL collectives: every call maps to one ProcessGroupNCCL operation on the rank's GPU.
#include "parallel/nccl_collectives.h"

#include <cstdlib>

#include "parallel/store_abort_signal.h"
#include "trainbench/config_io.h"

#ifdef TRAINBENCH_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace trainbench {

#ifdef TRAINBENCH_HAVE_NCCL
namespace {

c10d::ReduceOp ncclOp(ReduceOp op) { return op == ReduceOp::Max ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM; }

// NCCL errors and timeouts surface as exceptions of c10d's own types; the trainer knows one.
void waitOrAbort(const c10::intrusive_ptr<c10d::Work>& work, int rank) {
    try {
        work->wait();
    } catch (const std::exception& e) {
        throw CollectiveAborted("rank " + std::to_string(rank) + ": NCCL collective failed: " + e.what());
    }
}

// ProcessGroupNCCL takes one tensor per operation: a call over several tensors is one
// operation each, queued back to back on the NCCL stream and waited for together.
class NcclWork : public CollectiveWork {
public:
    NcclWork(std::vector<c10::intrusive_ptr<c10d::Work>> works, std::vector<torch::Tensor> tensors, int rank)
        : works_(std::move(works)), tensors_(std::move(tensors)), rank_(rank) {}
    void wait() override {
        for (auto& work : works_) waitOrAbort(work, rank_);
    }

private:
    std::vector<c10::intrusive_ptr<c10d::Work>> works_;
    std::vector<torch::Tensor> tensors_;  // alive until the operations have been waited for
    int rank_;
};

class NcclCollectives : public Collectives {
public:
    NcclCollectives(c10::intrusive_ptr<c10d::ProcessGroupNCCL> group, int rank, int world_size, int device_index)
        : group_(std::move(group)), rank_(rank), world_size_(world_size), device_index_(device_index) {}
    // Ranks in other processes: aborts travel through the rendezvous store as well.
    void signalAbortsThrough(c10::intrusive_ptr<c10d::Store> store) {
        auto group = group_;
        signal_ = std::make_unique<StoreAbortSignal>(std::move(store), [group](const std::string&) { group->abort(); });
    }
    ~NcclCollectives() override {
        signal_.reset();
        try {
            group_->shutdown();
        } catch (...) {  // a group already aborted has nothing left to shut down
        }
    }
    int rank() const override { return rank_; }
    int worldSize() const override { return world_size_; }
    void allReduce(std::vector<torch::Tensor>& tensors, ReduceOp op) override {
        allReduceAsync(tensors, op)->wait();
    }
    std::shared_ptr<CollectiveWork> allReduceAsync(std::vector<torch::Tensor> tensors, ReduceOp op) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        c10d::AllreduceOptions options;
        options.reduceOp = ncclOp(op);
        std::vector<c10::intrusive_ptr<c10d::Work>> works;
        for (auto& tensor : tensors) {
            std::vector<torch::Tensor> one{tensor};
            works.push_back(group_->allreduce(one, options));
        }
        return std::make_shared<NcclWork>(std::move(works), std::move(tensors), rank_);
    }
    // The flat-buffer forms (_reduce_scatter_base, _allgather_base): NCCL works in place when
    // the slice is the rank's own part of the full buffer, as the buckets arrange.
    std::shared_ptr<CollectiveWork> reduceScatterAsync(torch::Tensor input, torch::Tensor output) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        c10d::ReduceScatterOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->_reduce_scatter_base(output, input, options)};
        return std::make_shared<NcclWork>(std::move(works), std::vector<torch::Tensor>{input, output}, rank_);
    }
    std::shared_ptr<CollectiveWork> allGatherAsync(torch::Tensor input, torch::Tensor output) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        std::vector<c10::intrusive_ptr<c10d::Work>> works{group_->_allgather_base(output, input, c10d::AllgatherOptions())};
        return std::make_shared<NcclWork>(std::move(works), std::vector<torch::Tensor>{input, output}, rank_);
    }
    // Splits are rows; c10d takes them as sizes along the first dimension.
    void allToAll(const torch::Tensor& input, torch::Tensor& output, const std::vector<int64_t>& input_splits,
                  const std::vector<int64_t>& output_splits) override {
        ++calls_;
        const auto start = std::chrono::steady_clock::now();
        torch::NoGradGuard no_grad;
        auto sent = input.contiguous();
        std::vector<int64_t> out_splits = output_splits, in_splits = input_splits;
        std::vector<c10::intrusive_ptr<c10d::Work>> works{
            group_->alltoall_base(output, sent, out_splits, in_splits, c10d::AllToAllOptions())};
        NcclWork(std::move(works), {sent, output}, rank_).wait();
        // (The wait is on the host; the exchange itself ran on NCCL's stream, which the next
        // kernel orders after: the time is the host's view, an upper bound of the transfer.)
        all_to_all_ns_ +=
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    }
    void broadcast(std::vector<torch::Tensor>& tensors, int root) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        c10d::BroadcastOptions options;
        options.rootRank = root;
        std::vector<c10::intrusive_ptr<c10d::Work>> works;
        for (auto& tensor : tensors) {
            std::vector<torch::Tensor> one{tensor};
            works.push_back(group_->broadcast(one, options));
        }
        NcclWork(std::move(works), tensors, rank_).wait();
    }
    void barrier() override {
        ++calls_;
        c10d::BarrierOptions options;
        options.device_ids = {device_index_};
        waitOrAbort(group_->barrier(options), rank_);
    }
    void abort(const std::string& reason) override {
        if (signal_) signal_->raise("rank " + std::to_string(rank_) + ": " + reason);
        group_->abort();
    }

private:
    c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
    int rank_, world_size_;
    int64_t device_index_;
    std::unique_ptr<StoreAbortSignal> signal_;
};

}  // namespace

void requireNcclBuiltIn() {}

void prepareNcclEnvironment() {
    // Without blocking wait NCCL's watchdog tears the whole process down on a failed or
    // timed-out collective, which the engine must never do.
    setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
}

std::unique_ptr<Collectives> makeNcclCollectives(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                                 int device_index, std::chrono::milliseconds timeout,
                                                 bool across_processes) {
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, std::move(options));
    auto collectives = std::make_unique<NcclCollectives>(std::move(group), rank, world_size, device_index);
    if (across_processes) collectives->signalAbortsThrough(store);
    return collectives;
}

#else

void prepareNcclEnvironment() {}

void requireNcclBuiltIn() {
    throw ConfigError("runtime.device", "this build has no NCCL (CMake did not find the torch wheel's nccl.h), so "
                                        "CUDA ranks cannot reduce; use runtime.device \"cpu\" or rebuild with the "
                                        "nvidia-nccl package of the torch wheel installed");
}

std::unique_ptr<Collectives> makeNcclCollectives(c10::intrusive_ptr<c10d::Store>, int, int, int,
                                                 std::chrono::milliseconds, bool) {
    requireNcclBuiltIn();
    return nullptr;
}

#endif

}  // namespace trainbench
