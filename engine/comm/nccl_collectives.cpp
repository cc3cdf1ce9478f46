// NCCL collectives: every call maps to one ProcessGroupNCCL operation on the rank's GPU.
#include "comm/nccl_collectives.h"

#include <atomic>
#include <cstdlib>
#include <memory>

#include "comm/rendezvous_abort_signal.h"
#include "trainbench/config_io.h"

#ifdef TRAINBENCH_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace trainbench {

std::vector<std::pair<const char*, const char*>> ncclEnvironment() {
    return {
        // Waits order the stream, never the host (a blocking wait stalls the host at every
        // bucket, every ZeRO-3 gather and every all-to-all until the GPU has caught up).
        {"TORCH_NCCL_BLOCKING_WAIT", "0"},
        // On a failed or timed-out collective the watchdog aborts the communicators and records
        // the error, and leaves the process alone (3, the default, ends it: the engine must not).
        {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "2"},
        // The heartbeat monitor would end the process minutes after any such error.
        {"TORCH_NCCL_ENABLE_MONITORING", "0"},
        // Before aborting, the watchdog waits 4x this for a debug dump that is not asked for.
        {"TORCH_NCCL_DUMP_ON_TIMEOUT", "0"},
        {"TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", "250"},
    };
}

#ifdef TRAINBENCH_HAVE_NCCL
namespace {

c10d::ReduceOp ncclOp(ReduceOp op) { return op == ReduceOp::Max ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM; }

// A collective's wait orders the rank's current CUDA stream after it and returns at once (no
// blocking wait: see prepareNcclEnvironment), so the host runs ahead into the next kernels and a
// bucket's reduction overlaps the rest of the backward. A collective that fails or times out is
// found by ProcessGroupNCCL's watchdog, which aborts the communicator (releasing any kernel
// waiting on it) and records the error in the group: every wait asks the group first, so the
// rank's next collective throws CollectiveAborted, as a blocking wait would have.
void throwOnGroupError(c10d::ProcessGroupNCCL& group, int rank) {
    const auto error = group.getError();
    if (error == c10d::ErrorType::SUCCESS) return;
    const char* what = error == c10d::ErrorType::TIMEOUT        ? "a collective timed out (runtime.comm_timeout_s)"
                       : error == c10d::ErrorType::REMOTE_ERROR ? "another rank's collective failed"
                                                                : "NCCL reported a communicator error";
    throw CollectiveAborted("rank " + std::to_string(rank) + ": " + what);
}

void waitOrAbort(c10d::ProcessGroupNCCL& group, const c10::intrusive_ptr<c10d::Work>& work, int rank) {
    throwOnGroupError(group, rank);
    try {
        if (work) work->wait();
    } catch (const std::exception& e) {
        throw CollectiveAborted("rank " + std::to_string(rank) + ": NCCL collective failed: " + e.what());
    }
}

// Issues one operation. A group that was aborted (by this session, another process's signal or
// the watchdog) refuses it with c10d's error, which the trainer knows as CollectiveAborted; any
// other error (an argument, a local out-of-memory) is this rank's own and keeps its type.
template <typename Issue>
c10::intrusive_ptr<c10d::Work> issueOrAbort(c10d::ProcessGroupNCCL& group, const std::atomic<bool>& aborted, int rank,
                                            Issue&& issue) {
    throwOnGroupError(group, rank);
    try {
        return issue();
    } catch (const std::exception& e) {
        if (!aborted.load() && group.getError() == c10d::ErrorType::SUCCESS) throw;
        throw CollectiveAborted("rank " + std::to_string(rank) + ": NCCL collective refused: " + e.what());
    }
}

// ProcessGroupNCCL takes one tensor per operation: a call over several tensors is one
// operation each, queued back to back on the NCCL stream and waited for together.
class NcclWork : public CollectiveWork {
public:
    NcclWork(c10::intrusive_ptr<c10d::ProcessGroupNCCL> group, std::vector<c10::intrusive_ptr<c10d::Work>> works,
             std::vector<torch::Tensor> tensors, int rank)
        : group_(std::move(group)), works_(std::move(works)), tensors_(std::move(tensors)), rank_(rank) {}
    void wait() override {
        for (auto& work : works_) waitOrAbort(*group_, work, rank_);
    }

private:
    c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
    std::vector<c10::intrusive_ptr<c10d::Work>> works_;
    std::vector<torch::Tensor> tensors_;  // alive until the operations have been waited for
    int rank_;
};

class NcclCollectives : public Collectives {
public:
    NcclCollectives(c10::intrusive_ptr<c10d::ProcessGroupNCCL> group, int rank, int world_size, int device_index)
        : group_(std::move(group)), rank_(rank), world_size_(world_size), device_index_(device_index) {}
    // Ranks in other processes: aborts travel through the rendezvous store as well.
    void signalAbortsThrough(c10::intrusive_ptr<c10d::Store> store, RemoteAbortHandler on_remote_abort) {
        auto group = group_;
        auto aborted = aborted_;
        signal_ = std::make_unique<RendezvousAbortSignal>(std::move(store), [group, aborted, on_remote_abort](
                                                                                const std::string& reason) {
            if (on_remote_abort) on_remote_abort(reason);
            aborted->store(true);
            group->abort();
        });
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
            works.push_back(issueOrAbort(*group_, *aborted_, rank_, [&] { return group_->allreduce(one, options); }));
        }
        return std::make_shared<NcclWork>(group_, std::move(works), std::move(tensors), rank_);
    }
    // The flat-buffer forms (_reduce_scatter_base, _allgather_base): NCCL works in place when
    // the slice is the rank's own part of the full buffer, as the buckets arrange.
    std::shared_ptr<CollectiveWork> reduceScatterAsync(torch::Tensor input, torch::Tensor output) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        c10d::ReduceScatterOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        std::vector<c10::intrusive_ptr<c10d::Work>> works{
            issueOrAbort(*group_, *aborted_, rank_, [&] { return group_->_reduce_scatter_base(output, input, options); })};
        return std::make_shared<NcclWork>(group_, std::move(works), std::vector<torch::Tensor>{input, output}, rank_);
    }
    std::shared_ptr<CollectiveWork> allGatherAsync(torch::Tensor input, torch::Tensor output) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        std::vector<c10::intrusive_ptr<c10d::Work>> works{issueOrAbort(
            *group_, *aborted_, rank_, [&] { return group_->_allgather_base(output, input, c10d::AllgatherOptions()); })};
        return std::make_shared<NcclWork>(group_, std::move(works), std::vector<torch::Tensor>{input, output}, rank_);
    }
    // Splits are rows; c10d takes them as sizes along the first dimension.
    void allToAll(const torch::Tensor& input, torch::Tensor& output, const std::vector<int64_t>& input_splits,
                  const std::vector<int64_t>& output_splits) override {
        ++calls_;
        const auto start = std::chrono::steady_clock::now();
        torch::NoGradGuard no_grad;
        auto sent = input.contiguous();
        std::vector<int64_t> out_splits = output_splits, in_splits = input_splits;
        std::vector<c10::intrusive_ptr<c10d::Work>> works{issueOrAbort(*group_, *aborted_, rank_, [&] {
            return group_->alltoall_base(output, sent, out_splits, in_splits, c10d::AllToAllOptions());
        })};
        NcclWork(group_, std::move(works), {sent, output}, rank_).wait();
        // (The wait orders the stream, not the host: the time is the host's cost of the call;
        // the transfer itself shows in the step time.)
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
            works.push_back(issueOrAbort(*group_, *aborted_, rank_, [&] { return group_->broadcast(one, options); }));
        }
        NcclWork(group_, std::move(works), tensors, rank_).wait();
    }
    void barrier() override {
        ++calls_;
        c10d::BarrierOptions options;
        options.device_ids = {device_index_};
        // A barrier's wait blocks the host until the GPU is there: what a barrier is for.
        waitOrAbort(*group_, issueOrAbort(*group_, *aborted_, rank_, [&] { return group_->barrier(options); }), rank_);
    }
    void abort(const std::string& reason) override {
        aborted_->store(true);
        if (signal_) signal_->raise("rank " + std::to_string(rank_) + ": " + reason);
        group_->abort();
    }

private:
    c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
    int rank_, world_size_;
    int64_t device_index_;
    // Set once this group is aborted (here or by another process's signal): calls it then refuses
    // are CollectiveAborted.
    std::shared_ptr<std::atomic<bool>> aborted_ = std::make_shared<std::atomic<bool>>(false);
    std::unique_ptr<RendezvousAbortSignal> signal_;
};

}  // namespace

bool ncclBuiltIn() { return true; }

void requireNcclBuiltIn() {}

void prepareNcclEnvironment() {
    for (const auto& [name, value] : ncclEnvironment()) setenv(name, value, /*overwrite=*/0);
}

std::unique_ptr<Collectives> makeNcclCollectives(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                                 int device_index, std::chrono::milliseconds timeout,
                                                 bool across_processes, RemoteAbortHandler on_remote_abort) {
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, std::move(options));
    auto collectives = std::make_unique<NcclCollectives>(std::move(group), rank, world_size, device_index);
    if (across_processes) collectives->signalAbortsThrough(store, std::move(on_remote_abort));
    return collectives;
}

#else

bool ncclBuiltIn() { return false; }

void prepareNcclEnvironment() {}

void requireNcclBuiltIn() {
    throw ConfigError("runtime.device", "this build has no NCCL (CMake did not find the torch wheel's nccl.h), so "
                                        "CUDA ranks cannot reduce; use runtime.device \"cpu\" or rebuild with the "
                                        "nvidia-nccl package of the torch wheel installed");
}

std::unique_ptr<Collectives> makeNcclCollectives(c10::intrusive_ptr<c10d::Store>, int, int, int,
                                                 std::chrono::milliseconds, bool, RemoteAbortHandler) {
    requireNcclBuiltIn();
    return nullptr;
}

#endif

}  // namespace trainbench
