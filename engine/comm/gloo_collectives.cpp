// Gloo collectives: every call maps to ProcessGroupGloo operations on the rank's CPU tensors.
//
// Built against Debian's libgloo-dev headers (never its library): the torch wheel carries
// ProcessGroupGloo and gloo itself inside libtorch_cpu.so, and exports what this file links
// (the constructor, Options, createDeviceFor*). Debian's gloo/rendezvous/store.h predates the
// store interface the wheel's GlooStore adapter was built for, so nothing here touches that
// adapter (nor ProcessGroupGloo::_getStore()); gloo's own errors arrive as std::exception.
#include "comm/gloo_collectives.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "comm/rendezvous_abort_signal.h"
#include "comm/roll_call.h"

namespace trainbench {
namespace {

c10d::ReduceOp glooOp(ReduceOp op) { return op == ReduceOp::Max ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM; }

// Issues one ProcessGroupGloo operation. Enqueueing records the operation in c10d's flight
// recorder, one per process and unsafe when groups in several threads enqueue at once (seen:
// a crash inside its map when rank threads of one process ran an all-to-all together): every
// group of this process issues under one lock. Enqueueing is quick; the operations run unlocked.
template <typename Issue>
c10::intrusive_ptr<c10d::Work> issued(Issue&& issue) {
    static std::mutex process_wide;
    std::lock_guard lock(process_wide);
    return issue();
}

// The first line of an error: gloo and c10d append source locations and backtraces.
std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// What the ranks of one group share with their works: the abort and the failure's account.
struct GlooGroup {
    c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
    c10::intrusive_ptr<c10d::Store> store;
    int rank = 0;
    int world_size = 1;
    std::chrono::milliseconds timeout{0};
    std::unique_ptr<RendezvousAbortSignal> signal;  // across processes only
    std::unique_ptr<RollCall> roll_call;
    std::atomic<bool> aborted{false};
    std::mutex reason_mutex;
    std::string reason;  // why the group was aborted, guarded by reason_mutex

    void setAborted(const std::string& why) {
        std::lock_guard lock(reason_mutex);
        if (!aborted.exchange(true)) reason = why;
    }
    [[noreturn]] void throwAborted() {
        std::lock_guard lock(reason_mutex);
        throw CollectiveAborted(reason);
    }
    void throwIfAborted() {
        if (aborted.load()) throwAborted();
    }

    // A collective of this rank failed in gloo (a peer's connection closed, or the timeout):
    // the ranks still alive answer the roll call, the others are named, and every rank of the
    // run is told through the abort signal.
    [[noreturn]] void failed(const std::string& collective, const std::string& error) {
        if (aborted.load()) throwAborted();  // released by an abort: that is the first-hand reason
        // A rank that stopped or failed raised the abort key before it left: its leaving is what
        // failed this collective, and the key says why (a stop included).
        if (signal && signal->checkNow()) throwAborted();
        std::string what = collective + " failed (" + firstLine(error) + ")";
        const std::string here = "rank " + std::to_string(rank) + ": ";
        roll_call->answer(rank);
        if (signal) signal->raise(here + what);  // so that the others answer the roll call at once
        const auto grace = std::min<std::chrono::milliseconds>(std::chrono::seconds(5), timeout / 2);
        const std::vector<int> lost = roll_call->missing(world_size, rank, grace);
        if (!lost.empty()) {
            what += ": " + describeRanks(lost) + " of " + std::to_string(world_size) +
                    (lost.size() == 1 ? " is" : " are") + " lost (no answer in the rendezvous store within " +
                    std::to_string(grace.count()) + " ms: killed, stopped, or its machine unreachable)";
            setAborted(here + what);
            throw RankLost(what);  // the trainer says which rank this is
        }
        setAborted(here + what);
        throwAborted();
    }
};

// One call's operations (one per tensor where c10d takes one), waited for in order. Gloo works
// block until done or failed; the wait polls so that an abort releases it at once.
class GlooWork : public CollectiveWork {
public:
    GlooWork(std::shared_ptr<GlooGroup> group, std::string name, std::vector<c10::intrusive_ptr<c10d::Work>> works,
             std::vector<torch::Tensor> keep, std::vector<std::pair<torch::Tensor, torch::Tensor>> copy_back = {})
        : group_(std::move(group)), name_(std::move(name)), works_(std::move(works)), keep_(std::move(keep)),
          copy_back_(std::move(copy_back)) {}
    void wait() override {
        for (auto& work : works_) waitFor(*work);
        works_.clear();
        // Tensors that were not contiguous went through contiguous copies.
        for (auto& [target, staged] : copy_back_) target.copy_(staged);
        copy_back_.clear();
    }

private:
    void waitFor(c10d::Work& work) {
        while (true) {
            group_->throwIfAborted();
            try {
                work.wait(std::chrono::milliseconds(100));
                return;
            } catch (const std::exception& e) {
                if (!work.isCompleted()) continue;  // only the poll's time ran out
                try {
                    work.wait();  // completed meanwhile: returns, or throws gloo's own error
                    return;
                } catch (const std::exception& error) {
                    group_->failed(name_, error.what());
                }
            }
        }
    }

    std::shared_ptr<GlooGroup> group_;
    std::string name_;
    std::vector<c10::intrusive_ptr<c10d::Work>> works_;
    std::vector<torch::Tensor> keep_;  // alive until the operations have been waited for
    std::vector<std::pair<torch::Tensor, torch::Tensor>> copy_back_;
};

class GlooCollectives : public Collectives {
public:
    explicit GlooCollectives(std::shared_ptr<GlooGroup> group) : g_(std::move(group)) {}
    ~GlooCollectives() override {
        g_->signal.reset();
        // A group whose collectives failed or were abandoned may still hold operations that only
        // gloo's timeout ends, one after another; its destructor would wait for each. The
        // process is ending its run: the group is left to the process's end instead.
        if (g_->aborted.load()) (void)g_->group.release();
    }
    int rank() const override { return g_->rank; }
    int worldSize() const override { return g_->world_size; }
    void allReduce(std::vector<torch::Tensor>& tensors, ReduceOp op) override { allReduceAsync(tensors, op)->wait(); }
    std::shared_ptr<CollectiveWork> allReduceAsync(std::vector<torch::Tensor> tensors, ReduceOp op) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        g_->throwIfAborted();
        c10d::AllreduceOptions options;
        options.reduceOp = glooOp(op);
        // ProcessGroupGloo reduces the tensors of one call into each other: one call per tensor.
        std::vector<c10::intrusive_ptr<c10d::Work>> works;
        std::vector<std::pair<torch::Tensor, torch::Tensor>> copy_back;
        for (auto& tensor : tensors) {
            if (tensor.numel() == 0) continue;
            std::vector<torch::Tensor> one{contiguous(tensor, copy_back)};
            works.push_back(issued([&] { return g_->group->allreduce(one, options); }));
        }
        return std::make_shared<GlooWork>(g_, "all_reduce #" + std::to_string(calls_.load()), std::move(works),
                                          std::move(tensors), std::move(copy_back));
    }
    std::shared_ptr<CollectiveWork> reduceScatterAsync(torch::Tensor input, torch::Tensor output) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        g_->throwIfAborted();
        c10d::ReduceScatterOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        std::vector<std::pair<torch::Tensor, torch::Tensor>> copy_back;
        torch::Tensor out = contiguous(output, copy_back);
        torch::Tensor in = input.contiguous();
        std::vector<c10::intrusive_ptr<c10d::Work>> works{
            issued([&] { return g_->group->_reduce_scatter_base(out, in, options); })};
        return std::make_shared<GlooWork>(g_, "reduce_scatter #" + std::to_string(calls_.load()), std::move(works),
                                          std::vector<torch::Tensor>{input, output, in, out}, std::move(copy_back));
    }
    std::shared_ptr<CollectiveWork> allGatherAsync(torch::Tensor input, torch::Tensor output) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        g_->throwIfAborted();
        std::vector<std::pair<torch::Tensor, torch::Tensor>> copy_back;
        torch::Tensor out = contiguous(output, copy_back);
        // The input may be this rank's slice of the output: gloo reads it before writing.
        torch::Tensor in = input.contiguous();
        std::vector<c10::intrusive_ptr<c10d::Work>> works{
            issued([&] { return g_->group->_allgather_base(out, in, c10d::AllgatherOptions()); })};
        return std::make_shared<GlooWork>(g_, "all_gather #" + std::to_string(calls_.load()), std::move(works),
                                          std::vector<torch::Tensor>{input, output, in, out}, std::move(copy_back));
    }
    void allToAll(const torch::Tensor& input, torch::Tensor& output, const std::vector<int64_t>& input_splits,
                  const std::vector<int64_t>& output_splits) override {
        ++calls_;
        const auto start = std::chrono::steady_clock::now();
        torch::NoGradGuard no_grad;
        g_->throwIfAborted();
        torch::Tensor sent = input.contiguous();
        std::vector<std::pair<torch::Tensor, torch::Tensor>> copy_back;
        torch::Tensor received = contiguous(output, copy_back);
        std::vector<int64_t> out_splits = output_splits, in_splits = input_splits;
        std::vector<c10::intrusive_ptr<c10d::Work>> works{issued(
            [&] { return g_->group->alltoall_base(received, sent, out_splits, in_splits, c10d::AllToAllOptions()); })};
        GlooWork(g_, "all_to_all #" + std::to_string(calls_.load()), std::move(works), {sent, received},
                 std::move(copy_back))
            .wait();
        all_to_all_ns_ +=
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    }
    void broadcast(std::vector<torch::Tensor>& tensors, int root) override {
        ++calls_;
        torch::NoGradGuard no_grad;
        g_->throwIfAborted();
        c10d::BroadcastOptions options;
        options.rootRank = root;
        std::vector<c10::intrusive_ptr<c10d::Work>> works;
        std::vector<std::pair<torch::Tensor, torch::Tensor>> copy_back;
        for (auto& tensor : tensors) {
            if (tensor.numel() == 0) continue;
            std::vector<torch::Tensor> one{contiguous(tensor, copy_back)};
            works.push_back(issued([&] { return g_->group->broadcast(one, options); }));
        }
        GlooWork(g_, "broadcast #" + std::to_string(calls_.load()), std::move(works), tensors, std::move(copy_back))
            .wait();
    }
    void barrier() override {
        ++calls_;
        g_->throwIfAborted();
        GlooWork(g_, "barrier #" + std::to_string(calls_.load()), {issued([&] { return g_->group->barrier(); })}, {}).wait();
    }
    void abort(const std::string& reason) override {
        const std::string message = "rank " + std::to_string(g_->rank) + ": " + reason;
        g_->setAborted(message);
        if (g_->signal) g_->signal->raise(message);
    }

private:
    // Gloo reads and writes dense memory: a strided tensor goes through a contiguous copy,
    // written back once the call has been waited for.
    static torch::Tensor contiguous(const torch::Tensor& tensor,
                                    std::vector<std::pair<torch::Tensor, torch::Tensor>>& copy_back) {
        if (tensor.is_contiguous()) return tensor;
        torch::Tensor staged = tensor.contiguous();
        copy_back.emplace_back(tensor, staged);
        return staged;
    }

    std::shared_ptr<GlooGroup> g_;
};

std::shared_ptr<::gloo::transport::Device> glooDevice(GlooNetwork network) {
    if (network == GlooNetwork::Loopback) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
        return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

std::unique_ptr<Collectives> makeGlooCollectives(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                                 std::chrono::milliseconds timeout, bool across_processes,
                                                 GlooNetwork network, RemoteAbortHandler on_remote_abort) {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(glooDevice(network));
    // One worker runs the rank's operations in the order they were issued (two would let a
    // later small all-reduce overtake a large one: harmless, but no faster on a CPU rank that
    // computes on every core meanwhile).
    options->threads = 1;
    auto shared = std::make_shared<GlooGroup>();
    shared->store = store;
    shared->rank = rank;
    shared->world_size = world_size;
    shared->timeout = timeout;
    try {
        shared->group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
    } catch (const std::exception& e) {
        throw CollectiveAborted("rank " + std::to_string(rank) + " of " + std::to_string(world_size) +
                                ": gloo could not connect to the other ranks (" + firstLine(e.what()) + ")");
    }
    // Across processes the roll call has its own connection to the TCPStore (a clone), so it
    // does not queue behind this rank's other store calls; threads share one HashStore.
    shared->roll_call = std::make_unique<RollCall>(across_processes ? store->clone() : store);
    if (across_processes) {
        std::weak_ptr<GlooGroup> weak = shared;
        shared->signal = std::make_unique<RendezvousAbortSignal>(store, [weak, on_remote_abort](const std::string& reason) {
            if (on_remote_abort) on_remote_abort(reason);
            if (auto group = weak.lock()) {
                group->roll_call->answer(group->rank);
                group->setAborted(reason);
            }
        });
    }
    return std::make_unique<GlooCollectives>(std::move(shared));
}

}  // namespace trainbench
