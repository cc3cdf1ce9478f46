// GPU readiness suite: what this machine can check of the CUDA paths before a GPU ever runs
// them (a memory sampler that outlives a throwing probe, rank threads that select their device
// and storage allocated on the buffer's device, the device budget of the rank's own GPU, NCCL's
// environment, per-step copies, the router's fp32 product under bf16 compute).
#include <QtTest/QtTest>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include <ATen/autocast_mode.h>

#include "kernels/cpu_kernels.h"
#include "kernels/product_precision.h"
#include "memory/cuda_memory.h"
#include "memory/device_selection.h"
#include "memory/host_to_device.h"
#include "model/gate.h"
#include "comm/nccl_collectives.h"
#include "session/memory_sampler.h"
#include "tiny_model.h"
#include "trainbench/memory_plan.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

RunConfig tinyConfig(int64_t steps) {
    RunConfig c = tinyRun(steps);
    c.train.warmup_steps = 1;
    return c;
}

RunSummary train(const RunConfig& config, SessionOptions options = {}) {
    TrainingSession session(config, std::move(options));
    session.start();
    if (!session.wait(std::chrono::minutes(5))) throw std::runtime_error("the run did not end");
    return session.summary();
}

// Records every device request while alive.
struct RequestLog {
    std::mutex mutex;
    std::vector<std::pair<std::string, DeviceRequest>> requests;
    RequestLog() {
        observeDeviceRequests([this](const c10::Device& device, DeviceRequest kind) {
            std::lock_guard lock(mutex);
            requests.emplace_back(device.str(), kind);
        });
    }
    ~RequestLog() { observeDeviceRequests({}); }
    int count(const std::string& device, DeviceRequest kind) {
        std::lock_guard lock(mutex);
        int n = 0;
        for (const auto& [d, k] : requests) n += d == device && k == kind;
        return n;
    }
};

}  // namespace

class TestGpuReadiness : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The sampler is a thread of its own: a probe that throws (the caching allocator before CUDA
    // is initialised does) must cost that rank's sample, not the process.
    void aThrowingCudaProbeCostsOnlyItsSample() {
        MemoryAccount account;
        account.current = 12345;
        const std::vector<SampledRank> ranks{{"cpu", 0, &account}, {"cuda:1", 1, nullptr}, {"cuda:0", 2, nullptr}};
        std::vector<int> asked;
        auto throwing = [&](int device) -> std::optional<CudaMemorySample> {
            asked.push_back(device);
            if (device == 1) throw std::runtime_error("Invalid device argument 1: did you call init?");
            CudaMemorySample s;
            s.allocated_bytes = 100;
            s.reserved_bytes = 200;
            s.free_bytes = 300;
            return s;
        };
        const MemorySample sample = sampleRanksMemory(ranks, 7, 700, 1.5, throwing);
        QCOMPARE(asked, (std::vector<int>{1, 0}));  // the failure did not end the sample
        QVERIFY2(sample.error.find("cuda:1") != std::string::npos, sample.error.c_str());
        QVERIFY(sample.error.find("did you call init") != std::string::npos);
        std::map<std::string, double> values;
        for (const auto& p : sample.points) {
            values[p.key] = p.value;
            QCOMPARE(p.step, int64_t(7));
            QCOMPARE(p.tokens, int64_t(700));
        }
        QCOMPARE(values.size(), size_t(4));
        QCOMPARE(values["mem/cpu0/allocated_bytes"], 12345.0);
        QCOMPARE(values["mem/cuda0/allocated_bytes"], 100.0);
        QCOMPARE(values["mem/cuda0/reserved_bytes"], 200.0);
        QCOMPARE(values["mem/cuda0/free_bytes"], 300.0);
        QVERIFY(!values.count("mem/cuda1/allocated_bytes"));
        // Without a device (this machine, or CUDA not yet initialised) the real probe is empty.
        if (!torch::cuda::is_available()) {
            QVERIFY(!sampleCudaMemory(0).has_value());
            QCOMPARE(cudaPeakAllocatedBytes(0), int64_t(0));
        }
    }

    // Every rank thread selects its device first; ZeRO-3 allocates a gathered unit's storage
    // with the buffer's device current (the caching allocator reads the current device).
    void rankThreadsSelectTheirDeviceAndGathersAllocateOnTheBuffersDevice() {
        RequestLog log;
        RunConfig config = tinyConfig(1);
        config.runtime.world_size = 2;
        config.runtime.zero_stage = 3;
        QCOMPARE(train(config).status, RunStatus::Completed);
        QCOMPARE(log.count("cpu", DeviceRequest::kThread), 2);
        // Per micro-batch and rank, each unit gathered for its forward and again for its backward.
        const int scopes = log.count("cpu", DeviceRequest::kScope);
        QVERIFY2(scopes >= 2 * 2 * 2 * 2, qPrintable(QString::number(scopes)));
        QCOMPARE(int(log.requests.size()), 2 + scopes);  // and nothing on any other device
    }

    void replicatedRanksAllocateNothingThroughAScope() {
        RequestLog log;
        RunConfig config = tinyConfig(1);
        config.runtime.world_size = 2;
        QCOMPARE(train(config).status, RunStatus::Completed);
        QCOMPARE(log.count("cpu", DeviceRequest::kThread), 2);
        QCOMPARE(log.count("cpu", DeviceRequest::kScope), 0);
    }

    // A launched process plans against its own GPU (the budget of "cuda:0" would open a context
    // on GPU 0 from every process); on the CPU it is the host's share, a budget wins over both.
    void theDeviceBudgetIsTheRanksOwn() {
        RunConfig config = tinyConfig(1);
        config.runtime.world_size = 2;
        QCOMPARE(deviceMemoryBytesPerRank(config, "cpu"), hostMemoryBytesPerRank(config));
        QVERIFY(hostMemoryBytesPerRank(config) > 0);
        config.runtime.memory_limit_mb = 300;
        QCOMPARE(deviceMemoryBytesPerRank(config, "cpu"), int64_t(300) << 20);
        QCOMPARE(deviceMemoryBytesPerRank(config, "cuda:3"), int64_t(300) << 20);
        config.runtime.memory_limit_mb = 0;
        if (!torch::cuda::is_available()) QCOMPARE(deviceMemoryBytesPerRank(config, "cuda:3"), int64_t(0));
    }

    // Stream-ordered waits (no blocking wait), a watchdog that aborts without ending the process,
    // no heartbeat monitor; what the user set themselves is kept.
    void ncclRunsWithStreamOrderedWaitsAndNoProcessTeardown() {
        std::map<std::string, std::string> wanted;
        for (const auto& [name, value] : ncclEnvironment()) wanted[name] = value;
        QCOMPARE(wanted["TORCH_NCCL_BLOCKING_WAIT"], std::string("0"));
        QCOMPARE(wanted["TORCH_NCCL_ASYNC_ERROR_HANDLING"], std::string("2"));
        QCOMPARE(wanted["TORCH_NCCL_ENABLE_MONITORING"], std::string("0"));
        for (const auto& [name, value] : wanted) unsetenv(name.c_str());
        setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", 1);
        prepareNcclEnvironment();
        // Without NCCL in the build there is nothing to prepare: the environment is left alone.
        qInfo("ProcessGroupNCCL %s", ncclBuiltIn() ? "built in" : "not built in");
        if (ncclBuiltIn()) {
            QCOMPARE(std::string(std::getenv("TORCH_NCCL_BLOCKING_WAIT")), std::string("0"));
            QCOMPARE(std::string(std::getenv("TORCH_NCCL_ENABLE_MONITORING")), std::string("0"));
            QCOMPARE(std::string(std::getenv("TORCH_NCCL_DUMP_ON_TIMEOUT")), std::string("0"));
        } else {
            QVERIFY(std::getenv("TORCH_NCCL_BLOCKING_WAIT") == nullptr);
            QVERIFY(std::getenv("TORCH_NCCL_ENABLE_MONITORING") == nullptr);
        }
        QCOMPARE(std::string(std::getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING")), std::string("1"));
    }

    // On the CPU a per-step copy is the tensor itself (no copy), with a dtype change the values.
    void perStepInputsReachTheDevice() {
        auto tokens = torch::arange(12, torch::kInt64).view({3, 4});
        auto same = copyToDevice(tokens, torch::Device("cpu"));
        QCOMPARE(same.data_ptr(), tokens.data_ptr());
        auto wide = copyToDevice(tokens, torch::Device("cpu"), torch::kFloat32);
        QCOMPARE(wide.scalar_type(), torch::kFloat32);
        QVERIFY(torch::equal(wide, tokens.to(torch::kFloat32)));
    }

    // The router's product stays fp32 under bf16 compute: autocast's (CUDA's form, here on the
    // CPU with the kernels off) and the kernels' bf16 products. Checked against fp64 scores;
    // a bf16 product would be ~1e-3 away.
    void theRoutersProductStaysFp32UnderBf16Compute() {
        ModelConfig c = tinyTestModel(32, 64);
        c.n_routed_experts = 8;
        torch::manual_seed(11);
        Gate gate(c);
        torch::NoGradGuard no_grad;
        gate->weight.normal_(0, 0.5);
        auto x = torch::randn({64, 64});
        auto reference = torch::sigmoid(x.to(torch::kFloat64).mm(gate->weight.to(torch::kFloat64).t()));
        auto error = [&](const Routing& r) {
            return (r.scores.to(torch::kFloat64) - reference).abs().max().item<double>();
        };
        QVERIFY(error(gate->forward(x, 0, 0.0)) < 1e-6);
        {
            kernels::setCpuKernelsEnabled(false);
            at::autocast::set_autocast_enabled(at::kCPU, true);
            at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
            const Routing r = gate->forward(x, 0, 0.0);
            at::autocast::set_autocast_enabled(at::kCPU, false);
            at::autocast::clear_cache();
            kernels::setCpuKernelsEnabled(true);
            QCOMPARE(r.scores.scalar_type(), torch::kFloat32);
            QVERIFY2(error(r) < 1e-6, qPrintable(QString::number(error(r))));
            // The same product in bf16 is far from it: the check can tell the two apart.
            auto bf16 = torch::sigmoid(x.to(torch::kBFloat16).mm(gate->weight.to(torch::kBFloat16).t()));
            QVERIFY((bf16.to(torch::kFloat64) - reference).abs().max().item<double>() > 1e-4);
        }
        {
            kernels::ProductPrecisionScope bf16(kernels::ProductPrecision::kBf16);
            const Routing r = gate->forward(x, 0, 0.0);
            QVERIFY2(error(r) < 1e-6, qPrintable(QString::number(error(r))));
        }
    }
};

QTEST_APPLESS_MAIN(TestGpuReadiness)
#include "test_gpu_readiness.moc"
