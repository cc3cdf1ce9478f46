// TrainingSession: validates the config, starts one thread per rank, and turns their results
// into a run status and summary. The session's threads are the engine's pool for this run.
#include "trainbench/training_session.h"

#include <atomic>
#include <cmath>
#include <random>
#include <sstream>
#include <thread>

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "kernels/cpu_kernels.h"
#include "kernels/fp8_linear_cuda.h"
#include "data/token_source.h"
#include "trainbench/hf_directory.h"
#include "memory/cuda_memory.h"
#include "trainbench/device_type.h"
#include "memory/device_selection.h"
#include "memory/memory_account.h"
#include "trainbench/memory_plan.h"
#include "comm/in_process_collectives.h"
#include "comm/gloo_collectives.h"
#include "comm/nccl_collectives.h"
#include "comm/rendezvous.h"
#include "session/launch_agreement.h"
#include "session/memory_sampler.h"
#include "train/run_control.h"
#include "train/checkpoint.h"
#include "train/rank_trainer.h"
#include "train/sample_writer.h"
#include "offload/offload_dir.h"
#include "train/resume_compatibility.h"
#include "trainbench/config_io.h"
#include "trainbench/event_kind.h"

namespace trainbench {
namespace {

}  // namespace

std::string generateRunId() {
    std::random_device entropy;
    std::mt19937_64 engine((uint64_t(entropy()) << 32) ^ entropy() ^
                           uint64_t(std::chrono::system_clock::now().time_since_epoch().count()));
    static const char* digits = "0123456789abcdef";
    std::string id;
    for (int i = 0; i < 12; ++i) id += digits[engine() % 16];
    return id;
}

namespace {

// Resolves runtime.device into one device per rank.
std::vector<std::string> rankDevices(const RuntimeConfig& runtime) {
    std::string device = runtime.device;
    if (device == "auto") device = deviceTypeOf(runtime) == DeviceType::Cuda ? "cuda" : "cpu";
    std::vector<std::string> out;
    if (device == "cpu") {
        out.assign(runtime.world_size, "cpu");
        return out;
    }
    if (!torch::cuda::is_available())
        throw ConfigError("runtime.device", "runtime.device (\"" + runtime.device +
                                                "\"): no CUDA device is available here; use \"cpu\" or \"auto\"");
    std::vector<int> ids;
    if (device == "cuda") {
        for (int i = 0; i < runtime.world_size; ++i) ids.push_back(i);
    } else {
        std::stringstream list(device.substr(5));
        for (std::string item; std::getline(list, item, ',');) ids.push_back(std::stoi(item));
    }
    const int available = static_cast<int>(torch::cuda::device_count());
    if (static_cast<int64_t>(ids.size()) != runtime.world_size)
        throw ConfigError("runtime.device", "runtime.device (\"" + runtime.device + "\") names " +
                                                std::to_string(ids.size()) + " devices but runtime.world_size is " +
                                                std::to_string(runtime.world_size) + "; list one device per rank");
    for (int id : ids) {
        if (id < 0 || id >= available)
            throw ConfigError("runtime.device", "runtime.device (\"" + runtime.device + "\"): cuda:" +
                                                    std::to_string(id) + " does not exist (" +
                                                    std::to_string(available) + " visible)");
        out.push_back("cuda:" + std::to_string(id));
    }
    return out;
}

// A process started by a launcher runs one rank: on the GPU of its node-local rank, or on the
// CPU (its collectives through Gloo).
std::string launchedRankDevice(const RuntimeConfig& runtime, const ProcessLaunch& launch) {
    const std::string where = "rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.world_size) +
                              " (started by " + launch.launcher + ")";
    if (runtime.world_size != launch.world_size)
        throw ConfigError("runtime.world_size", "runtime.world_size (" + std::to_string(runtime.world_size) + ") but " +
                                                    where + ": the launcher's world size wins; set it to " +
                                                    std::to_string(launch.world_size) + " or leave it out");
    if (deviceTypeOf(runtime) == DeviceType::Cpu) return "cpu";
    if (!torch::cuda::is_available())
        throw ConfigError("runtime.device", where + ": runtime.device is \"" + runtime.device +
                                                "\" but no CUDA device is visible to this process");
    const int available = static_cast<int>(torch::cuda::device_count());
    // A launcher that binds one GPU to each process (Slurm's --gpus-per-task) leaves it cuda:0.
    if (available == 1) return "cuda:0";
    if (launch.local_rank >= available)
        throw ConfigError("runtime.device", where + ": LOCAL_RANK " + std::to_string(launch.local_rank) +
                                                " needs cuda:" + std::to_string(launch.local_rank) + ", but only " +
                                                std::to_string(available) + " GPUs are visible; start at most " +
                                                std::to_string(available) + " processes per node");
    return "cuda:" + std::to_string(launch.local_rank);
}

// One run, whatever each process drew: rank 0's id and checkpoint folder are every rank's (the
// store and the checkpoints it writes are under that id; a resume names it on every rank).
void adoptLeadRun(c10d::Store& store, const ProcessLaunch& launch, SessionOptions& options,
                  std::chrono::milliseconds timeout) {
    const std::string mine = options.run_id + "\n" + options.checkpoint_dir;
    if (launch.rank == 0) store.set("launch/run", std::vector<uint8_t>(mine.begin(), mine.end()));
    store.wait({"launch/run"}, timeout);
    const auto bytes = store.get("launch/run");
    const std::string lead(bytes.begin(), bytes.end());
    const size_t cut = lead.find('\n');
    options.run_id = lead.substr(0, cut);
    options.checkpoint_dir = lead.substr(cut + 1);
}

// TRAINBENCH_CPU_COLLECTIVES=gloo: the rank threads of one process reduce through Gloo over the
// loopback instead of the in-process hub (bench/hub_vs_gloo.sh measures the two; the hub is
// kept for threads while it is the faster: docs/BENCHMARKS.md).
bool glooForThreads() {
    const char* choice = std::getenv("TRAINBENCH_CPU_COLLECTIVES");
    return choice && std::string(choice) == "gloo";
}

// Where this run's state lives: the placement rule asked with what the session knows (the
// ranks' device, whether the CPU kernels run) and the plan's budget (whether the device can keep
// the gradient sums and the unit order's boundary activations beside the rest).
Placement placementOfRun(const RunConfig& config, const std::string& rank_device, int64_t device_bytes) {
    PlacementQuery query;
    query.device = cudaDeviceIndex(rank_device) >= 0 ? DeviceType::Cuda : DeviceType::Cpu;
    query.cpu_autocast = !kernels::cpuKernelsEnabled();
    const Placement planned = planMemory(config, device_bytes).placement;
    query.gradient_sums_off_device = planned.gradient_sums != Tier::Device;
    query.gradient_sums_in_file = planned.gradient_sums == Tier::File;
    query.boundaries_off_device = planned.boundaries == Tier::Host;
    query.boundaries_in_file = planned.boundaries == Tier::File;
    // window_schedule auto where the unit order fits nowhere: the plan kept the micro-batch order.
    query.unit_order_fits_nowhere = !planned.unit_order;
    return placementFor(config, query);
}

}  // namespace

struct TrainingSession::Impl {
    RunConfig config;
    std::string run_id;
    MetricBus bus;
    RunControl control;
    // The ranks this process runs, as threads: all W, or the one a launcher gave it. The
    // vectors below are indexed by slot, the position in `ranks`.
    std::vector<int> ranks;
    std::vector<std::string> devices;
    SessionOptions options;
    std::shared_ptr<CollectiveHub> hub;              // CPU ranks
    c10::intrusive_ptr<c10d::Store> thread_store;    // CUDA rank threads of one process
    // A launched rank's rendezvous store (TCPStore), met in the constructor: the launch's
    // agreement is checked there, before the run is recorded anywhere.
    c10::intrusive_ptr<c10d::Store> process_store;
    std::vector<std::unique_ptr<Collectives>> collectives;  // each made by its rank's thread
    // runtime.expert_parallel > 1: each rank's expert group (EP ranks) and replica group (the
    // W / EP ranks holding the same experts); CPU ranks meet in hubs linked to `hub`.
    std::vector<std::shared_ptr<CollectiveHub>> expert_hubs, replica_hubs;
    std::vector<std::unique_ptr<Collectives>> expert_collectives, replica_collectives;
    std::mutex collectives_mutex;  // guards the slots of `collectives` (not the objects)
    std::vector<MemoryAccount*> memory;  // CPU ranks only (CUDA has its own statistics)
    // runtime.offload optimizer: what each rank keeps in host memory (its moments); else null.
    std::vector<MemoryAccount*> host_memory;
    int fail_rank = -1;
    int64_t fail_step = -1;
    int stall_rank = -1;
    int64_t stall_step = -1;
    std::chrono::steady_clock::time_point started;
    std::vector<std::thread> threads;
    std::vector<RankResult> results;
    std::atomic<int64_t> completed_steps{0};
    std::atomic<int64_t> completed_tokens{0};  // token positions through the last completed step
    std::atomic<int> running_ranks{0};
    std::atomic<bool> started_flag{false};
    std::atomic<bool> finished{false};
    std::mutex finish_mutex;
    std::condition_variable finish_cv;
    bool joined = false;
    mutable std::mutex abort_mutex;
    std::string abort_reason;  // set by abortRun: the run ends failed with it
    // Where every rank's state lives (their devices are of one kind): placementOfRun, with the
    // plan's answer on whether the device can keep the gradient sums.
    Placement placement;

    // Every rank's memory, twice a second, between the per-step peaks: the GUI's memory curve
    // moves while a long step runs. Ends when the last rank does. A failing CUDA probe loses its
    // sample, said once as a warning; the thread carries on.
    void sampleMemory() {
        std::vector<SampledRank> sampled;
        for (size_t slot = 0; slot < ranks.size(); ++slot) sampled.push_back({devices[slot], ranks[slot], memory[slot], host_memory[slot]});
        bool warned = false;
        std::unique_lock lock(finish_mutex);
        while (!finish_cv.wait_for(lock, std::chrono::milliseconds(500), [this] { return finished.load(); })) {
            const int64_t step = completed_steps.load();
            const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            MemorySample sample = sampleRanksMemory(sampled, step, completed_tokens.load(), wall, sampleCudaMemory);
            if (!sample.points.empty()) bus.publish(std::move(sample.points));
            if (!sample.error.empty() && !warned) {
                warned = true;
                bus.publish(RunEvent{step, wall, eventKindName(EventKind::Warning), "memory sampling failed (" + sample.error +
                                                                 "); the memory curve has gaps where it does"});
            }
        }
    }

    // The collectives of the rank in `slot`, made on its own thread: making a process group
    // blocks until every rank of the group has come (or the timeout).
    void makeCollectives(size_t slot) {
        const int W = static_cast<int>(config.runtime.world_size), EP = static_cast<int>(config.runtime.expert_parallel);
        const int rank = ranks[slot];
        const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config.runtime.comm_timeout_s * 1000));
        std::unique_ptr<Collectives> world, experts, replicas;
        if (devices[slot] == "cpu" && !options.launch && !glooForThreads()) {
            world = std::make_unique<InProcessCollectives>(hub, rank, W);
            if (EP > 1) {
                experts = std::make_unique<InProcessCollectives>(expert_hubs[rank / EP], rank % EP, EP);
                replicas = std::make_unique<InProcessCollectives>(replica_hubs[rank % EP], rank / EP, W / EP);
            }
        } else {
            auto store = options.launch ? process_store : thread_store;
            const bool across = options.launch.has_value();
            // A rank of another process that stopped at its boundary (its process got SIGTERM or
            // Ctrl-C, this one not) stops this process too, before the released wait is asked why.
            RemoteAbortHandler on_remote_abort = [this](const std::string& reason) {
                const std::string stop = kStopRequested;
                if (reason.size() >= stop.size() && reason.compare(reason.size() - stop.size(), stop.size(), stop) == 0)
                    control.requestStop();
            };
            // Each group its own communicator, met through its own corner of the store.
            auto in = [&](const std::string& prefix) { return c10::make_intrusive<c10d::PrefixStore>(prefix, store); };
            std::function<std::unique_ptr<Collectives>(c10::intrusive_ptr<c10d::Store>, int, int)> make;
            if (devices[slot] == "cpu") {
                // Ranks on one machine connect over the loopback; across machines, over the
                // network (GLOO_SOCKET_IFNAME, or the hostname's address).
                const bool one_node = !options.launch || options.launch->local_world_size >= W;
                const GlooNetwork network = one_node ? GlooNetwork::Loopback : GlooNetwork::Hostname;
                make = [&](c10::intrusive_ptr<c10d::Store> at, int group_rank, int group_size) {
                    return makeGlooCollectives(std::move(at), group_rank, group_size, timeout, across, network,
                                               on_remote_abort);
                };
            } else {
                const int device = cudaDeviceIndex(devices[slot]);
                make = [&](c10::intrusive_ptr<c10d::Store> at, int group_rank, int group_size) {
                    return makeNcclCollectives(std::move(at), group_rank, group_size, device, timeout, across,
                                               on_remote_abort);
                };
            }
            world = make(in("world"), rank, W);
            if (EP > 1) {
                experts = make(in("experts" + std::to_string(rank / EP)), rank % EP, EP);
                replicas = make(in("replicas" + std::to_string(rank % EP)), rank / EP, W / EP);
            }
        }
        std::lock_guard lock(collectives_mutex);
        collectives[slot] = std::move(world);
        expert_collectives[slot] = std::move(experts);
        replica_collectives[slot] = std::move(replicas);
    }

    void rankBody(size_t slot) {
        const int rank = ranks[slot];
        try {
            // Before anything touches CUDA on this thread: its streams, its communicator and every
            // allocation that reads the current device belong on the rank's GPU.
            selectThreadDevice(c10::Device(devices[slot]));
            makeCollectives(slot);
            RankSetup setup;
            setup.config = &config;
            setup.rank = rank;
            setup.world_size = static_cast<int>(config.runtime.world_size);
            setup.device = devices[slot];
            setup.control = &control;
            setup.collectives = collectives[slot].get();
            setup.expert_collectives = expert_collectives[slot].get();
            setup.replica_collectives = replica_collectives[slot].get();
            setup.checkpoint_dir = options.checkpoint_dir;
            setup.resume_from = options.resume_from;
            setup.memory = memory[slot];
            setup.host_memory = host_memory[slot];
            setup.placement = placement;
            setup.recover_out_of_memory = options.recover_out_of_memory;
            setup.explored_best = options.explored_best;
            if (rank == fail_rank) setup.fail_at_step = fail_step;
            if (rank == stall_rank) setup.stall_at_step = stall_step;
            setup.bus = &bus;
            setup.started = started;
            setup.completed_steps = &completed_steps;
            setup.completed_tokens = &completed_tokens;
            results[slot] = runRank(setup);
        } catch (const std::exception& e) {  // no rendezvous or process group: nothing trained
            results[slot].status = RunStatus::Failed;
            results[slot].error = e.what();
        }
        if (results[slot].status == RunStatus::Failed) control.requestStop();
        // A rank that ended early aborted its own collectives; NCCL communicators are one per
        // rank (Gloo's too), so the other rank threads' are aborted here too, or a rank waiting in
        // a collective would sit out the whole timeout. (In-process ranks share one hub: done.)
        if (results[slot].status == RunStatus::Failed || results[slot].status == RunStatus::Stopped) {
            std::lock_guard lock(collectives_mutex);
            for (size_t other = 0; other < collectives.size(); ++other)
                if (other != slot && (devices[other] != "cpu" || glooForThreads()))
                    for (auto* group : {&collectives, &expert_collectives, &replica_collectives})
                        if ((*group)[other]) (*group)[other]->abort("rank " + std::to_string(rank) + " ended");
        }
        if (--running_ranks == 0) {
            RunSummary s = summarize();
            std::string message = runStatusName(s.status);
            if (!s.error.empty()) message += ": " + s.error;
            bus.publish(RunEvent{s.steps, s.wall_time_s, eventKindName(EventKind::Status), message});
            {
                std::lock_guard lock(finish_mutex);
                finished = true;
            }
            finish_cv.notify_all();
        }
    }

    RunSummary summarize() const {
        RunSummary s;
        s.run_id = run_id;
        s.micro_batch_size = config.train.micro_batch_size;
        s.gradient_accumulation_steps = config.train.gradient_accumulation_steps;
        s.world_size = config.runtime.world_size;
        s.global_batch_size = config.globalBatch();
        s.final_loss = std::nan("");
        s.wall_time_s = started_flag ? std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() : 0;
        if (!finished && running_ranks > 0) {
            s.status = control.paused() ? RunStatus::Paused : RunStatus::Running;
            s.steps = completed_steps;
            return s;
        }
        if (results.empty()) return s;
        const RankResult& lead = results[0];
        s.status = lead.status;
        // The reason is the rank that failed first-hand; the others only report that it did.
        for (const auto& r : results) {
            if (r.status == RunStatus::Failed) {
                s.status = RunStatus::Failed;
                if (s.error.empty() && !r.failed_by_another_rank) s.error = r.error;
            }
            s.out_of_memory = s.out_of_memory || r.out_of_memory;
            s.peak_memory_bytes = std::max(s.peak_memory_bytes, r.peak_memory_bytes);
            s.host_peak_bytes = std::max(s.host_peak_bytes, r.host_peak_bytes);
        }
        for (const auto& r : results)
            if (r.status == RunStatus::Failed && s.error.empty()) s.error = r.error;
        {
            std::lock_guard lock(abort_mutex);
            if (!abort_reason.empty() && s.status != RunStatus::Failed) {
                s.status = RunStatus::Failed;
                s.error = abort_reason;
            }
        }
        s.steps = lead.steps;
        s.tokens = lead.tokens;
        // The split in force at the end: an out-of-memory back-off may have changed it.
        if (lead.micro_batch_size > 0) {
            s.micro_batch_size = lead.micro_batch_size;
            s.gradient_accumulation_steps = lead.gradient_accumulation_steps;
        }
        s.final_loss = lead.final_loss;
        // The rate of this session: tokens a resumed checkpoint had already seen took no time here.
        s.tokens_per_s = s.wall_time_s > 0 ? double(lead.tokens - lead.tokens_at_start) / s.wall_time_s : 0;
        return s;
    }
};

TrainingSession::TrainingSession(RunConfig config, SessionOptions options) : impl_(std::make_unique<Impl>()) {
    requireValidRunConfig(config);
    if (options.launch) {
        impl_->devices = {launchedRankDevice(config.runtime, *options.launch)};
        impl_->ranks = {options.launch->rank};
    } else {
        impl_->devices = rankDevices(config.runtime);
        for (int r = 0; r < config.runtime.world_size; ++r) impl_->ranks.push_back(r);
    }
    // fp8 on a GPU needs the block-scaled fp8 products (compute capability 9.0).
    if (isChoice(config.runtime.dtype, ComputeDtype::Fp8))
        for (const std::string& device : impl_->devices)
            if (device.rfind("cuda:", 0) == 0)
                if (auto why = kernels::fp8CudaUnsupportedReason(std::stoi(device.substr(5))); !why.empty())
                    throw ConfigError("runtime.dtype", why);
    // A config that cannot fit is refused in a moment, before a byte of it is allocated.
    const int64_t device_bytes = deviceMemoryBytesPerRank(config, impl_->devices.front());
    requirePlanFits(config, device_bytes);
    impl_->placement = placementOfRun(config, impl_->devices.front(), device_bytes);
    // Bad data is bad input: refuse it here (ConfigError naming the file), not in a rank thread.
    {
        auto source = openTokenSource(config);
        const int64_t window = config.train.seq_len + 1;
        if (config.train.eval_every > 0 && source->sampleCount(Split::Validation, window) == 0)
            throw ConfigError("data.val_fraction",
                              "data.val_fraction (" + std::to_string(config.data.val_fraction) +
                                  "): the validation part holds no window of train.seq_len + 1 = " +
                                  std::to_string(window) +
                                  " tokens, and train.eval_every asks for evaluation; raise data.val_fraction, set "
                                  "data.val_path, lower train.seq_len, or set train.eval_every to 0");
    }
    // The NVMe tier: a directory that cannot take the moments is refused now (every rank of
    // this process keeps its files there).
    if (!config.runtime.offload_dir.empty())
        requireUsableOffloadDir(config.runtime.offload_dir,
                                planMemory(config).nvme_bytes * int64_t(impl_->ranks.size()));
    // Sample prompts that cannot be encoded or do not fit are refused now, not at the first sample.
    if (config.train.sample_every > 0) SampleWriter check_prompts(config);
    if (impl_->devices.front() != "cpu") requireNcclBuiltIn();
    // So are starting weights that do not fit the model section (headers only, no data read).
    if (!config.train.init_from.empty() && options.resume_from.empty()) checkInitialWeights(config.model, config.train.init_from);
    // A checkpoint that cannot continue under this config is bad input, refused before any thread.
    if (!options.resume_from.empty())
        requireResumable(config, readTrainerState(options.resume_from).config_json, options.resume_from);
    // A launched rank meets the others now, and they agree that they train the same thing:
    // a mismatch is refused on every rank before anything is recorded or trained.
    if (options.launch) {
        const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config.runtime.comm_timeout_s * 1000));
        impl_->process_store = processRendezvous(*options.launch, timeout);
        requireSameLaunch(*impl_->process_store, *options.launch, launchIdentity(config), timeout);
        adoptLeadRun(*impl_->process_store, *options.launch, options, timeout);
    }
    impl_->config = std::move(config);
    impl_->run_id = options.run_id.empty() ? generateRunId() : options.run_id;
    impl_->options = std::move(options);
}

TrainingSession::~TrainingSession() {
    stop();
    wait();
}

const RunConfig& TrainingSession::config() const { return impl_->config; }
MetricBus& TrainingSession::bus() { return impl_->bus; }

void TrainingSession::start() {
    if (impl_->started_flag.exchange(true)) return;
    const auto& runtime = impl_->config.runtime;
    int threads = static_cast<int>(runtime.threads);
    if (threads == 0)
        threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency() / runtime.world_size));
    at::set_num_threads(threads);
    const int W = static_cast<int>(runtime.world_size);
    const size_t slots = impl_->ranks.size();
    impl_->results.assign(slots, RankResult{});
    impl_->running_ranks = static_cast<int>(slots);
    impl_->started = std::chrono::steady_clock::now();
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(runtime.comm_timeout_s * 1000));
    impl_->hub = std::make_shared<CollectiveHub>(W, timeout, [this] { return impl_->control.paused(); });
    impl_->thread_store = threadRendezvous();
    if (impl_->devices.front() != "cpu") {
        prepareNcclEnvironment();
        // Here, before the sampler and the rank threads: CUDA's first use fills the allocator's
        // tables unlocked, and the sampler reads them.
        initializeCuda();
    }
    impl_->collectives.resize(slots);
    impl_->expert_collectives.resize(slots);
    impl_->replica_collectives.resize(slots);
    if (const int EP = static_cast<int>(runtime.expert_parallel); EP > 1) {
        auto paused = [this] { return impl_->control.paused(); };
        for (int g = 0; g < W / EP; ++g) impl_->expert_hubs.push_back(std::make_shared<CollectiveHub>(EP, timeout, paused));
        for (int g = 0; g < EP; ++g) impl_->replica_hubs.push_back(std::make_shared<CollectiveHub>(W / EP, timeout, paused));
        for (const auto& groups : {impl_->expert_hubs, impl_->replica_hubs})
            for (const auto& group : groups) CollectiveHub::link(impl_->hub, group);
    }
    const int64_t limit = runtime.memory_limit_mb * 1024 * 1024;
    for (size_t slot = 0; slot < slots; ++slot)
        impl_->memory.push_back(impl_->devices[slot] == "cpu" ? newMemoryAccount(limit) : nullptr);
    const bool offloaded = !isChoice(runtime.offload, Offload::None);
    for (size_t slot = 0; slot < slots; ++slot) {
        impl_->host_memory.push_back(offloaded ? newMemoryAccount() : nullptr);
        // A CPU rank's host tier is its device's memory: the budget holds both, as `plan` and
        // the refusal above count them (requirePlanFits).
        if (offloaded && impl_->memory[slot] && limit > 0) shareMemoryLimit(impl_->memory[slot], impl_->host_memory[slot]);
    }
    impl_->bus.publish(RunEvent{0, 0.0, eventKindName(EventKind::Status), "running"});
    for (size_t slot = 0; slot < slots; ++slot) impl_->threads.emplace_back([this, slot] { impl_->rankBody(slot); });
    impl_->threads.emplace_back([this] { impl_->sampleMemory(); });
}

void TrainingSession::pause() {
    impl_->control.setPaused(true);
    impl_->bus.publish(RunEvent{impl_->completed_steps, 0.0, eventKindName(EventKind::Status), "paused"});
}

void TrainingSession::resume() {
    impl_->control.setPaused(false);
    impl_->bus.publish(RunEvent{impl_->completed_steps, 0.0, eventKindName(EventKind::Status), "running"});
}

void TrainingSession::stop() { impl_->control.requestStop(); }

void TrainingSession::holdForStore(const std::string& reason) {
    if (!impl_->control.setHeld(true)) return;
    impl_->bus.publish(RunEvent{impl_->completed_steps, 0.0, eventKindName(EventKind::StoreUnwritable),
                                "the run store cannot be written (" + reason +
                                    "); training is held until it can, no point is lost meanwhile"});
}

void TrainingSession::releaseStoreHold() {
    if (!impl_->control.setHeld(false)) return;
    impl_->bus.publish(RunEvent{impl_->completed_steps, 0.0, eventKindName(EventKind::StoreWritable),
                                "the run store accepts writes again; training goes on"});
}

void TrainingSession::abortRun(const std::string& reason) {
    {
        std::lock_guard lock(impl_->abort_mutex);
        if (impl_->abort_reason.empty()) impl_->abort_reason = reason;
    }
    impl_->control.requestStop();
}

bool TrainingSession::wait(std::chrono::milliseconds timeout) {
    if (!impl_->started_flag) return true;
    {
        std::unique_lock lock(impl_->finish_mutex);
        if (timeout == std::chrono::milliseconds::max()) {
            impl_->finish_cv.wait(lock, [this] { return impl_->finished.load(); });
        } else if (!impl_->finish_cv.wait_for(lock, timeout, [this] { return impl_->finished.load(); })) {
            return false;
        }
    }
    if (!impl_->joined) {
        for (auto& t : impl_->threads) t.join();
        impl_->threads.clear();
        impl_->joined = true;
        impl_->bus.close();
    }
    return true;
}

RunStatus TrainingSession::status() const {
    if (!impl_->started_flag) return RunStatus::Created;
    return impl_->summarize().status;
}

int64_t TrainingSession::completedSteps() const { return impl_->completed_steps; }

bool TrainingSession::trainsOnCpu() const { return impl_->devices.front() == "cpu"; }

std::chrono::steady_clock::time_point TrainingSession::startedAt() const { return impl_->started; }
RunSummary TrainingSession::summary() const { return impl_->summarize(); }
void TrainingSession::injectRankFailure(int rank, int64_t step) {
    impl_->fail_rank = rank;
    impl_->fail_step = step;
}

void TrainingSession::injectRankStall(int rank, int64_t step) {
    impl_->stall_rank = rank;
    impl_->stall_step = step;
}

int TrainingSession::liveThreads() const { return static_cast<int>(impl_->threads.size()); }

}  // namespace trainbench
