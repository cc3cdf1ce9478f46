// Memory suite: the tracking allocator, budgets, the planner against measurement, the explorer,
// and out-of-memory recovery that keeps the global batch and the losses.
#include <QtTest/QtTest>

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "memory/memory_account.h"
#include "trainbench/batch_explorer.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/presets.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

RunConfig tinySplit(int64_t m, int64_t K, int64_t steps) {
    RunConfig c = builtinTinyConfig();
    c.train.micro_batch_size = m;
    c.train.gradient_accumulation_steps = K;
    c.train.steps = steps;
    c.train.eval_every = 0;
    c.runtime.threads = 1;
    return c;
}

struct Trained {
    RunSummary summary;
    std::vector<double> losses;
    std::vector<RunEvent> events;
};

Trained train(const RunConfig& config, bool recover = true) {
    SessionOptions options;
    options.recover_out_of_memory = recover;
    TrainingSession session(config, options);
    auto inbox = session.bus().subscribe();
    session.start();
    session.wait();
    Trained out;
    out.summary = session.summary();
    BusBatch batch = inbox->drain();
    for (const auto& p : batch.points)
        if (p.key == "train/loss") out.losses.push_back(p.value);
    out.events = batch.events;
    return out;
}

// The explorer's rows of `config` (2 steps each) as the planner's tests read them: empty when
// every row fits and its planned peak is within 15 % of its measured one, else the first row that
// is not, named after `what`.
QString planAgainstMeasured(const ExploreResult& result, const QString& what) {
    for (const auto& row : result.rows) {
        const QString at = QString("%1 m=%2").arg(what).arg(row.micro_batch_size);
        if (!row.fits) return at + ": " + QString::fromStdString(row.note);
        if (row.measured_peak_bytes <= 0) return at + ": nothing measured";
        const double ratio = double(row.estimated_peak_bytes) / double(row.measured_peak_bytes);
        if (std::fabs(ratio - 1.0) >= 0.15)
            return at + QString(": planned %1, measured %2").arg(row.estimated_peak_bytes).arg(row.measured_peak_bytes);
    }
    return {};
}

ExploreResult exploreTwoSteps(const RunConfig& config) {
    ExploreOptions options;
    options.steps_per_row = 2;
    return exploreBatchSplits(config, 0, options);
}

}  // namespace

class TestMemory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Installed when the program started, before any account was opened (this runs first).
    void theTrackingAllocatorIsInstalledAtStart() {
        QVERIFY(currentMemoryAccount() == nullptr);
        QVERIFY(c10::GetCPUAllocator() != c10::GetDefaultCPUAllocator());
        QVERIFY(c10::GetCPUAllocator()->raw_deleter() != c10::GetDefaultCPUAllocator()->raw_deleter());
    }

    void trackingAllocatorCountsAndPeaks() {
        MemoryAccount* account = newMemoryAccount();
        {
            ScopedMemoryAccount scope(account);
            auto a = torch::empty({1000}, torch::kFloat32);  // 4,000 bytes
            QCOMPARE(account->current.load(), int64_t(4000));
            {
                auto b = torch::empty({250, 4}, torch::kFloat64);  // 8,000 bytes
                QCOMPARE(account->current.load(), int64_t(12000));
            }
            QCOMPARE(account->current.load(), int64_t(4000));
            QCOMPARE(account->peak.load(), int64_t(12000));
            account->resetPeak();
            QCOMPARE(account->peak.load(), int64_t(4000));
            auto c = torch::empty({10}, torch::kInt64);
            QCOMPARE(account->peak.load(), int64_t(4080));
        }
        QCOMPARE(account->current.load(), int64_t(0));
        // Outside the scope nothing is charged.
        auto d = torch::empty({1000}, torch::kFloat32);
        QCOMPARE(account->current.load(), int64_t(0));
        QCOMPARE(account->allocations.load(), int64_t(3));
    }

    // A freed block is kept for the next allocation of its 64-byte size class: the same memory
    // comes back, charged again as new; kept blocks charge nobody.
    void aFreedBlockIsReusedForItsSizeClassAndChargedAgain() {
        MemoryAccount* account = newMemoryAccount();
        ScopedMemoryAccount scope(account);
        auto a = torch::empty({5000}, torch::kFloat32);  // 20,000 bytes
        void* first = a.data_ptr();
        a = torch::Tensor();
        QCOMPARE(account->current.load(), int64_t(0));
        // Another class in between: malloc would carve it out of the freed block; the cache
        // keeps that block for its own class.
        auto other = torch::empty({2500}, torch::kFloat32);
        QVERIFY(other.data_ptr() != first);
        auto b = torch::ones({5000}, torch::kFloat32);
        QCOMPARE(b.data_ptr(), first);
        QCOMPARE(account->current.load(), int64_t(30000));
        QCOMPARE(b.sum().item<double>(), 5000.0);  // a reused block is the tensor's own
        b = torch::Tensor();
        auto c = torch::empty({19990}, torch::kUInt8);  // 19,990 bytes: the same class (20,032)
        QCOMPARE(c.data_ptr(), first);
        QCOMPARE(account->current.load(), int64_t(29990));
        auto d = torch::empty({5000}, torch::kFloat32);  // the class's block is taken: another
        QVERIFY(d.data_ptr() != first);
        QCOMPARE(account->current.load(), int64_t(49990));
        QCOMPARE(account->allocations.load(), int64_t(6));  // a, other, b, the sum's scalar, c, d
    }

    void aTensorFreedOnAnotherThreadCreditsItsAccount() {
        MemoryAccount* account = newMemoryAccount();
        torch::Tensor t;
        {
            ScopedMemoryAccount scope(account);
            t = torch::ones({512}, torch::kFloat32);
        }
        QCOMPARE(account->current.load(), int64_t(2048));
        std::thread([&t] { t = torch::Tensor(); }).join();
        QCOMPARE(account->current.load(), int64_t(0));
    }

    // oneDNN takes memory through raw_allocate / raw_deallocate (its scratch, every ideep
    // tensor): on CPUs with AVX-512 BF16 or AMX, every bf16 matrix product does. These calls are
    // made here directly, so any CPU checks the path.
    void rawAllocationsAreCountedAndFreedByTheirPointer() {
        MemoryAccount* account = newMemoryAccount();
        ScopedMemoryAccount scope(account);
        c10::Allocator* cpu = c10::GetCPUAllocator();
        QVERIFY(cpu->raw_deleter() != nullptr);

        void* raw = cpu->raw_allocate(1000);  // asserts the DataPtr's context is its data
        QVERIFY(raw != nullptr);
        QCOMPARE(reinterpret_cast<uintptr_t>(raw) % 64, uintptr_t(0));  // c10's alignment kept
        std::memset(raw, 0xab, 1000);
        QCOMPARE(account->current.load(), int64_t(1000));
        cpu->raw_deallocate(raw);
        QCOMPARE(account->current.load(), int64_t(0));

        // A DataPtr is simple, and its deleter is the raw one: a context released from it is
        // freed by the raw deleter, as raw_allocate's callers do.
        c10::DataPtr block = cpu->allocate(256);
        QVERIFY(cpu->is_simple_data_ptr(block));
        QVERIFY(block.get_deleter() == cpu->raw_deleter());
        std::memset(block.get(), 7, 256);
        c10::DataPtr copy = cpu->clone(block.get(), 256);  // allocate + copy_data
        QCOMPARE(account->current.load(), int64_t(512));
        QCOMPARE(std::memcmp(copy.get(), block.get(), 256), 0);
        QVERIFY(copy.get() != block.get());
        cpu->raw_deleter()(block.release_context());
        QCOMPARE(account->current.load(), int64_t(256));
        copy.clear();
        QCOMPARE(account->current.load(), int64_t(0));

        // Zero bytes: no block; freeing it is a no-op.
        void* none = cpu->raw_allocate(0);
        QVERIFY(none == nullptr);
        cpu->raw_deallocate(none);

        // A raw block freed on another thread credits the account that paid for it; a block
        // made on a thread without an account charges none when freed under one.
        void* shared = cpu->raw_allocate(4096);
        QCOMPARE(account->current.load(), int64_t(4096));
        std::thread([cpu, shared] { cpu->raw_deallocate(shared); }).join();
        QCOMPARE(account->current.load(), int64_t(0));
        void* foreign = nullptr;
        std::thread([cpu, &foreign] { foreign = cpu->raw_allocate(512); }).join();
        QCOMPARE(account->current.load(), int64_t(0));
        cpu->raw_deallocate(foreign);
        QCOMPARE(account->current.load(), int64_t(0));
        QCOMPARE(account->allocations.load(), int64_t(4));  // raw, block, copy, shared

        // A raw block of the default allocator (one made before the tracking allocator was
        // installed) handed back through the tracking one goes back where it came from.
        void* older = c10::GetDefaultCPUAllocator()->raw_allocate(3000);
        std::memset(older, 1, 3000);
        cpu->raw_deallocate(older);
        QCOMPARE(account->current.load(), int64_t(0));
    }

    void aRawAllocationOverTheBudgetRaisesOutOfMemory() {
        MemoryAccount* account = newMemoryAccount(1 << 16);  // 64 KiB
        ScopedMemoryAccount scope(account);
        c10::Allocator* cpu = c10::GetCPUAllocator();
        void* kept = cpu->raw_allocate(60000);
        bool raised = false;
        try {
            cpu->raw_allocate(10000);
        } catch (const c10::OutOfMemoryError&) {
            raised = true;
        }
        QVERIFY(raised);
        QCOMPARE(account->current.load(), int64_t(60000));
        QCOMPARE(account->peak.load(), int64_t(60000));  // the refused block moved no peak
        QCOMPARE(account->allocations.load(), int64_t(1));
        cpu->raw_deallocate(kept);
        QCOMPARE(account->current.load(), int64_t(0));
    }

    // Two accounts sharing a limit (a CPU rank's device and host tier): each allocation fails
    // once both together would pass it, naming both; the peaks stay each account's own.
    void accountsSharingALimitHoldBothUnderIt() {
        MemoryAccount* device = newMemoryAccount(1 << 16);  // 64 KiB
        MemoryAccount* host = newMemoryAccount();
        shareMemoryLimit(device, host);
        QCOMPARE(host->limit.load(), int64_t(1 << 16));
        c10::Allocator* cpu = c10::GetCPUAllocator();
        void* on_host = nullptr;
        {
            ScopedMemoryAccount scope(host);
            on_host = cpu->raw_allocate(40000);
        }
        ScopedMemoryAccount scope(device);
        void* on_device = cpu->raw_allocate(20000);  // 60,000 together: within
        QString message;
        try {
            cpu->raw_allocate(10000);  // 70,000 together, though 30,000 on the device alone
        } catch (const c10::OutOfMemoryError& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("one budget") && message.contains("runtime.memory_limit_mb"), qPrintable(message));
        QCOMPARE(device->current.load(), int64_t(20000));
        QCOMPARE(device->peak.load(), int64_t(20000));
        QCOMPARE(host->peak.load(), int64_t(40000));
        {
            ScopedMemoryAccount on(host);
            bool raised = false;
            try {
                cpu->raw_allocate(10000);  // the host's side fails the same way
            } catch (const c10::OutOfMemoryError&) {
                raised = true;
            }
            QVERIFY(raised);
        }
        cpu->raw_deallocate(on_device);
        cpu->raw_deallocate(on_host);
        QCOMPARE(device->current.load() + host->current.load(), int64_t(0));
    }

    // The oneDNN operators any x86-64 CPU reaches: ideep tensors (their buffers come from the
    // raw calls above), a linear layer and a convolution; their results against doubles.
    void oneDnnOperatorsRunOnTrackedMemory() {
        if (!at::hasMKLDNN()) QSKIP("this LibTorch is built without oneDNN");
        MemoryAccount* account = newMemoryAccount();
        {
            ScopedMemoryAccount scope(account);
            torch::manual_seed(3);
            auto x = torch::randn({32, 48});
            auto w = torch::randn({24, 48});
            auto b = torch::randn({24});
            const int64_t dense_bytes = account->current.load();
            auto x_onednn = x.to_mkldnn();
            QVERIFY(x_onednn.is_mkldnn());
            QVERIFY2(account->current.load() >= dense_bytes + 32 * 48 * 4,
                     "the ideep tensor's buffer is charged to the account");
            auto y = torch::mkldnn_linear(x_onednn, w.to_mkldnn(), b.to_mkldnn()).to_dense();
            auto expected = torch::addmm(b.to(torch::kFloat64), x.to(torch::kFloat64), w.to(torch::kFloat64).t());
            QVERIFY((y.to(torch::kFloat64) - expected).abs().max().item<double>() < 1e-4);

            auto image = torch::randn({1, 3, 8, 8});
            auto kernel = torch::randn({4, 3, 3, 3});
            auto conv = torch::mkldnn_convolution(image, kernel, {}, {0, 0}, {1, 1}, {1, 1}, 1);
            auto conv_expected = torch::conv2d(image.to(torch::kFloat64), kernel.to(torch::kFloat64));
            QVERIFY((conv.to(torch::kFloat64) - conv_expected).abs().max().item<double>() < 1e-4);

            // bf16 products: through oneDNN where the CPU has AVX-512 (BF16) or AMX, else ATen's own.
            auto a16 = x.to(torch::kBFloat16), w16 = w.to(torch::kBFloat16);
            auto p16 = torch::matmul(a16, w16.t());
            auto p_expected = torch::matmul(a16.to(torch::kFloat64), w16.to(torch::kFloat64).t());
            QVERIFY((p16.to(torch::kFloat64) - p_expected).abs().max().item<double>() < 0.25);
        }
        QCOMPARE(account->current.load(), int64_t(0));  // every byte given back
    }

    void theBudgetRaisesTheOutOfMemoryErrorCudaRaises() {
        MemoryAccount* account = newMemoryAccount(1 << 20);  // 1 MiB
        ScopedMemoryAccount scope(account);
        auto kept = torch::empty({200000}, torch::kFloat32);  // 800,000 bytes
        bool raised = false;
        try {
            auto more = torch::empty({100000}, torch::kFloat32);  // 400,000 more: over the budget
        } catch (const c10::OutOfMemoryError& e) {
            raised = true;
            QVERIFY2(QString(e.what()).contains("runtime.memory_limit_mb"), e.what());
        }
        QVERIFY(raised);
        // The refused allocation left no charge behind; a fitting one still succeeds.
        QCOMPARE(account->current.load(), int64_t(800000));
        auto fits = torch::empty({50000}, torch::kFloat32);
        QCOMPARE(account->current.load(), int64_t(1000000));
    }

    void plannerIsWithinFifteenPercentOfMeasuredPeaks() {
        // Global batch 16 of the tiny preset, every split; measured by the explorer.
        const ExploreResult result = exploreTwoSteps(tinySplit(8, 2, 2));
        QCOMPARE(result.rows.size(), size_t(5));
        const QString problem = planAgainstMeasured(result, "tiny");
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }

    // A multi-token-prediction module (model.n_mtp_depth 1): its weights, gradients and moments,
    // its joining step, block and head terms in the activations; with and without recomputation
    // and at stage 3 (the module gathered with the head's unit) on two ranks.
    void plannerIsWithinFifteenPercentWithAModule() {
        for (const auto& [checkpointing, stage] : std::vector<std::pair<const char*, int64_t>>{
                 {"none", 0}, {"full", 0}, {"feedforward", 0}, {"none", 3}}) {
            RunConfig c = tinySplit(8, 2, 2);
            c.model.n_mtp_depth = 1;
            c.runtime.activation_checkpointing = checkpointing;
            c.runtime.zero_stage = stage;
            if (stage > 0) c.runtime.world_size = 2;
            const ExploreResult result = exploreTwoSteps(c);
            QVERIFY(!result.rows.empty());
            const QString problem = planAgainstMeasured(result, QString("%1, stage %2").arg(checkpointing).arg(stage));
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
        }
    }

    // The same under expert parallelism (W 4, EP 2 and 4, stages 0 to 3): each rank's experts,
    // the tokens it receives, the exchanges' buffers, the moments of its slices and at stage 3
    // the unit gathered with its share of the experts.
    void plannerIsWithinFifteenPercentUnderExpertParallelism() {
        for (const auto& [ep, stage] : std::vector<std::pair<int64_t, int64_t>>{
                 {2, 0}, {4, 0}, {2, 1}, {4, 1}, {2, 2}, {4, 2}, {2, 3}, {4, 3}}) {
            RunConfig c = tinySplit(4, 1, 2);
            c.runtime.world_size = 4;
            c.runtime.expert_parallel = ep;
            c.runtime.zero_stage = stage;
            const ExploreResult result = exploreTwoSteps(c);
            QCOMPARE(result.rows.size(), size_t(3));
            for (const auto& row : result.rows) QCOMPARE(row.expert_parallel, ep);
            const QString problem = planAgainstMeasured(result, QString("EP %1 stage %2").arg(ep).arg(stage));
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
        }
    }

    // "What fits": the first layout in cost order (no recomputation before full, stages 0 to
    // 3) whose largest fitting micro-batch is at least 1, and the fewest ranks that fit m = 1.
    void adviceFindsTheCheapestLayoutThatFits() {
        RunConfig c = tinySplit(8, 1, 1);
        c.runtime.world_size = 4;
        c.model.n_layers = 6;
        auto peakAt = [&](int64_t stage, const char* recompute, int64_t m, int64_t W, int64_t ep = 1) {
            RunConfig x = c;
            x.runtime.world_size = W;
            x.runtime.expert_parallel = ep;
            x.runtime.zero_stage = stage;
            x.runtime.activation_checkpointing = recompute;
            x.train.micro_batch_size = m;
            return planMemory(x).peak_bytes;
        };
        // The advice keeps a tenth of the budget free: of `budgetFor(usable)` (about) `usable`
        // counts, never more.
        auto budgetFor = [](int64_t usable) {
            return static_cast<int64_t>(std::floor(double(usable) / (1.0 - kLayoutSafetyMargin)));
        };
        // A usable share between stage 1 and stage 0 at m = 1 (the moments decide): stage 1.
        const int64_t budget = (peakAt(0, "none", 1, 4) + peakAt(1, "none", 1, 4)) / 2;
        QVERIFY(peakAt(1, "none", 1, 4) < budget);
        const LayoutAdvice advice = adviseLayout(c, budgetFor(budget));
        QCOMPARE(advice.cheapest.zero_stage, int64_t(1));
        QCOMPARE(advice.cheapest.activation_checkpointing, std::string("none"));
        int64_t largest = 0;
        for (int64_t m : {1, 2}) if (peakAt(1, "none", m, 4) <= budget) largest = m;
        QCOMPARE(advice.cheapest.micro_batch_size, largest);
        QVERIFY(advice.cheapest_plan.peak_bytes <= budget);
        // Without the margin stage 0 would have fitted: the same budget given whole does not
        // make the advice take it.
        QVERIFY(peakAt(0, "none", 1, 4) > budget);
        // The fewest ranks at m = 1, for a budget just below the smallest layout on two ranks:
        // four, with the first layout in the documented order (no recomputation, stages 0 to 2,
        // expert parallelism at stages 0, 1 and 2 over EP 2 and 4, stage 3, stage 3 with EP 2 and 4;
        // then the feed-forward parts recomputed, then whole blocks) that fits there.
        int64_t smallest_on_two = INT64_MAX;
        for (const char* recompute : {"none", "feedforward", "full"}) {
            for (int64_t stage = 0; stage <= 3; ++stage)
                smallest_on_two = std::min(smallest_on_two, std::min(peakAt(stage, recompute, 1, 2), peakAt(stage, recompute, 1, 1)));
            for (int64_t stage = 0; stage <= 3; ++stage)
                smallest_on_two = std::min(smallest_on_two, peakAt(stage, recompute, 1, 2, 2));
        }
        const int64_t tight = smallest_on_two - 1;
        struct Expected {
            int64_t stage = -1, ep = 1;
            std::string recompute;
        } expected;
        for (const char* recompute : {"none", "feedforward", "full"}) {
            std::vector<std::pair<int64_t, int64_t>> order{{0, 1}, {1, 1}, {2, 1}, {0, 2}, {0, 4}, {1, 2}, {1, 4},
                                                           {2, 2}, {2, 4}, {3, 1}, {3, 2}, {3, 4}};
            for (const auto& [stage, ep] : order)
                if (expected.stage < 0 && peakAt(stage, recompute, 1, 4, ep) <= tight) expected = {stage, ep, recompute};
        }
        QVERIFY(expected.stage >= 0);
        const LayoutAdvice spread = adviseLayout(c, budgetFor(tight));
        QCOMPARE(spread.fewest_ranks, int64_t(4));
        QCOMPARE(spread.fewest_ranks_layout.zero_stage, expected.stage);
        QCOMPARE(spread.fewest_ranks_layout.expert_parallel, expected.ep);
        QCOMPARE(spread.fewest_ranks_layout.activation_checkpointing, expected.recompute);
        QCOMPARE(spread.fewest_ranks_layout.micro_batch_size, int64_t(1));
        // No budget: no advice.
        QCOMPARE(adviseLayout(c, 0).fewest_ranks, int64_t(0));
    }

    void plannerCountsStateByHand() {
        // Weights, gradients and AdamW moments follow from the parameter count alone; here a
        // config small enough to count by hand: vocab 8, dim 4, one dense layer.
        RunConfig c = tinySplit(2, 1, 1);
        c.model.vocab_size = 8;
        c.model.dim = 4;
        c.model.n_layers = 1;
        c.model.n_dense_layers = 1;
        c.model.inter_dim = 6;
        c.model.n_heads = 1;
        c.model.q_lora_rank = 0;
        c.model.kv_lora_rank = 2;
        c.model.qk_nope_head_dim = 2;
        c.model.qk_rope_head_dim = 2;
        c.model.v_head_dim = 2;
        // embed 32 + head 32 + final norm 4; block: wq 4*1*4=16, wkv_a 4*(2+2)=16, kv_norm 2,
        // wkv_b 2*1*(2+2)=8, wo 1*2*4=8, two norms 8, MLP 3*4*6=72  => 68 + 130 = 198
        const MemoryPlan plan = planMemory(c);
        QCOMPARE(plan.weight_bytes, int64_t(198 * 4));
        QCOMPARE(plan.gradient_bytes, int64_t(198 * 4));
        QCOMPARE(plan.optimizer_bytes, int64_t(2 * 198 * 4));
        QCOMPARE(plan.bucket_bytes, int64_t(0));  // one rank reduces nothing
        // The head in chunks (the rule's: the whole micro-batch here, m T = 2 T tokens): a
        // chunk's logits and the log-sum-exp's copy, 2 x (m T) x vocab floats, and the head
        // weight's gradient, vocab x dim floats. Whole logits: their gradient and softmax.
        QCOMPARE(plan.head_chunk_tokens, 2 * c.train.seq_len);
        QCOMPARE(plan.logits_bytes, int64_t(2 * 2 * c.train.seq_len * 8 * 4 + 8 * 4 * 4));
        RunConfig whole = c;
        whole.runtime.head_chunk_tokens = 0;
        QCOMPARE(planMemory(whole).logits_bytes, int64_t(2 * 2 * c.train.seq_len * 8 * 4));
        QCOMPARE(planMemory(whole).head_chunk_tokens, int64_t(0));
        // Two ranks: the gradients are the buckets' views, nothing more; the sync-each mode
        // keeps running sums of every bucket beside them; stage 1 halves the moments (99 each).
        c.runtime.world_size = 2;
        QCOMPARE(planMemory(c).bucket_bytes, int64_t(0));
        c.train.sync_each_micro_batch = true;
        QCOMPARE(planMemory(c).bucket_bytes, int64_t(198 * 4));
        c.train.sync_each_micro_batch = false;
        // Stage 0 on two ranks: one bucket (792 bytes) all-reduced and the statistics: 2 calls,
        // sending 2 x 792 x (2 - 1) / 2 bytes.
        c.runtime.zero_stage = 0;
        QCOMPARE(planMemory(c).collectives_per_step, int64_t(2));
        QCOMPARE(planMemory(c).bytes_sent_per_step, int64_t(792));
        c.runtime.zero_stage = 1;
        QCOMPARE(planMemory(c).optimizer_bytes, int64_t(2 * 99 * 4));
        QCOMPARE(planMemory(c).gradient_bytes, int64_t(198 * 4));
        // Stage 3: units embed 32, block 130, final norm + head 36. A rank holds 99 weights of its
        // shard and the block gathered (130), 99 gradient sums, the block's gradients forming
        // (130), and 2 x 99 moments. Per micro-batch 3 all-gathers in the
        // forward, 2 in the backward, 3 reduce-scatters; with the statistics and the norm
        // 8K + 2 calls, sending K x (3 x 792 - 128) / 2 bytes.
        c.runtime.zero_stage = 3;
        const MemoryPlan three = planMemory(c);
        QCOMPARE(three.weight_bytes, int64_t((99 + 130) * 4));
        QCOMPARE(three.gradient_bytes, int64_t(99 * 4));
        QCOMPARE(three.bucket_bytes, int64_t(130 * 4));
        QCOMPARE(three.optimizer_bytes, int64_t(2 * 99 * 4));
        const int64_t K = three.gradient_accumulation_steps;
        QVERIFY(K >= 1);
        QCOMPARE(three.collectives_per_step, 8 * K + 2);
        QCOMPARE(three.bytes_sent_per_step, K * (3 * 792 - 128) / 2);
    }

    // Decoding's cache of the published 671B config (61 layers, 128 heads of 128 + 64 key and 128
    // value dims, a 512 latent and a 64 rotary key; max_batch_size 8, max_seq_len 16384), counted
    // by hand at bf16: what the k_cache / v_cache formula gives against what MLA keeps.
    void inferenceCacheOfTheFullConfigByHand() {
        const RunConfig c = loadRunConfigFile(TRAINBENCH_SOURCE_DIR "/configs/deepseek/config_671B.json");
        const InferenceCachePlan cache = planInferenceCache(c.model);
        QCOMPARE(cache.rows, int64_t(8));
        QCOMPARE(cache.positions, int64_t(16384));
        QCOMPARE(cache.naive_bytes_per_token, int64_t(61) * 128 * (128 + 64 + 128) * 2);  // 4,997,120
        QCOMPARE(cache.absorbed_bytes_per_token, int64_t(61) * (512 + 64) * 2);          // 70,272
        QCOMPARE(cache.naive_bytes, int64_t(4'997'120) * 8 * 16384);                      // 610 GiB
        QCOMPARE(cache.absorbed_bytes, int64_t(70'272) * 8 * 16384);                      // 8.6 GiB
        QCOMPARE(planInferenceCache(c.model, 4).absorbed_bytes_per_token, int64_t(140'544));  // fp32
    }

    void largestFittingMicroBatchFollowsTheBudget() {
        RunConfig c = tinySplit(16, 1, 1);
        const MemoryPlan at4 = planMemory(tinySplit(4, 4, 1));
        const MemoryPlan at8 = planMemory(tinySplit(8, 2, 1));
        QVERIFY(at4.peak_bytes < at8.peak_bytes);
        const MemoryPlan plan = planMemory(c, (at4.peak_bytes + at8.peak_bytes) / 2);
        QVERIFY(!plan.fits);
        QCOMPARE(plan.largest_fitting_micro_batch, int64_t(4));
        QCOMPARE(planMemory(c, at4.peak_bytes / 100).largest_fitting_micro_batch, int64_t(0));
    }

    void explorerRowsKeepTheGlobalBatchAndAgreeAcrossRanks() {
        // Two rank threads, global batch 2 x 8 = 16, a budget between the peaks of m = 2 and
        // m = 8: the rows that run out of memory fail on both ranks together, nobody hangs.
        RunConfig c = tinySplit(8, 1, 2);
        c.runtime.world_size = 2;
        const int64_t low = planMemory(tinySplit(2, 4, 1)).peak_bytes, high = planMemory(tinySplit(8, 1, 1)).peak_bytes;
        c.runtime.memory_limit_mb = std::max<int64_t>(1, (low + high) / 2 / (1024 * 1024));
        ExploreOptions options;
        options.steps_per_row = 2;
        const ExploreResult result = exploreBatchSplits(c, 0, options);
        QCOMPARE(result.rows.size(), size_t(4));  // m = 1, 2, 4, 8
        for (const auto& row : result.rows) QCOMPARE(row.micro_batch_size * row.gradient_accumulation_steps * 2, int64_t(16));
        QVERIFY(result.rows.front().fits);
        QVERIFY(!result.rows.back().fits);
        QCOMPARE(QString::fromStdString(result.rows.back().note), QString("out of memory"));
        QVERIFY(result.recommended >= 0);
        const ExploreRow& best = result.rows[result.recommended];
        QVERIFY(best.fits);
        QVERIFY(double(best.measured_peak_bytes) <= 0.9 * double(result.limit_bytes));
        for (const auto& row : result.rows)
            if (row.fits && double(row.measured_peak_bytes) <= 0.9 * double(result.limit_bytes))
                QVERIFY(row.tokens_per_s <= best.tokens_per_s);
    }

    // Two ranks with overlapped reduction run out of memory in the first micro-batch of a
    // window of two (before the hooks are armed): every rank still starts every bucket, the
    // window is dropped on both, nobody crashes or hangs, and the smaller splits train.
    void outOfMemoryBeforeTheLastMicroBatchIsAgreedWithOverlap() {
        RunConfig c = tinySplit(8, 2, 2);
        c.runtime.world_size = 2;  // global batch 8 x 2 x 2 = 32: m = 8 runs with K = 2
        const int64_t low = planMemory(tinySplit(2, 8, 1)).peak_bytes, high = planMemory(tinySplit(8, 2, 1)).peak_bytes;
        c.runtime.memory_limit_mb = std::max<int64_t>(1, (low + high) / 2 / (1024 * 1024));
        QVERIFY(c.runtime.overlap_reduction);
        ExploreOptions options;
        options.steps_per_row = 2;
        const ExploreResult result = exploreBatchSplits(c, 0, options);
        QCOMPARE(result.rows.size(), size_t(5));  // m = 1, 2, 4, 8, 16
        const ExploreRow& m8 = result.rows[3];
        QCOMPARE(m8.micro_batch_size, int64_t(8));
        QCOMPARE(m8.gradient_accumulation_steps, int64_t(2));
        QVERIFY(!m8.fits);
        QCOMPARE(QString::fromStdString(m8.note), QString("out of memory"));
        QVERIFY(result.rows.front().fits);
    }

    void outOfMemoryBacksOffAndKeepsTheLosses_data() {
        QTest::addColumn<bool>("sync_each");
        QTest::newRow("reduce once per window") << false;
        // Backs off the same way (here the budget is crossed in the window's first micro-batch;
        // test_accumulation checks that a dropped window's running sums go with it).
        QTest::newRow("sync each micro-batch") << true;
    }

    void outOfMemoryBacksOffAndKeepsTheLosses() {
        QFETCH(bool, sync_each);
        auto split = [&](int64_t m, int64_t K, int64_t steps) {
            RunConfig c = tinySplit(m, K, steps);
            c.train.sync_each_micro_batch = sync_each;
            // A wider dense MLP: AdamW's moments, what steady m = 8 holds beyond its step 1, span
            // well over the budget's rounding to whole MiB.
            c.model.inter_dim = 1024;
            return c;
        };
        // Peaks measured without a budget: step 1 of m = 8 (no AdamW moments yet), steady m = 8,
        // and steady m = 4. A budget between step 1 and steady m = 8 (and above m = 4) runs out
        // of memory mid-run, at step 2.
        const int64_t first8 = train(split(8, 2, 1)).summary.peak_memory_bytes;
        const int64_t steady8 = train(split(8, 2, 2)).summary.peak_memory_bytes;
        const Trained small = train(split(4, 4, 5));
        const int64_t steady4 = small.summary.peak_memory_bytes;
        // A run longer than one step also holds the next step's first micro-batch, read ahead
        // (int64 tokens and targets).
        const int64_t read_ahead = 2 * 8 * builtinTinyConfig().train.seq_len * int64_t(sizeof(int64_t));
        const int64_t floor = std::max(first8 + read_ahead, steady4);
        RunConfig limited = split(8, 2, 5);
        limited.runtime.memory_limit_mb = floor / (1 << 20) + 1;  // the budget is in whole MiB
        QVERIFY2(limited.runtime.memory_limit_mb * (1 << 20) < steady8,
                 qPrintable(QString("%1 %2 %3").arg(first8).arg(steady4).arg(steady8)));

        const Trained backed = train(limited);
        QCOMPARE(backed.summary.status, RunStatus::Completed);
        QCOMPARE(backed.summary.steps, int64_t(5));
        QCOMPARE(backed.summary.micro_batch_size, int64_t(4));
        QCOMPARE(backed.summary.gradient_accumulation_steps, int64_t(4));
        QCOMPARE(backed.summary.global_batch_size, int64_t(16));
        QCOMPARE(backed.summary.tokens, small.summary.tokens);
        int backoffs = 0;
        for (const auto& e : backed.events)
            if (e.kind == "oom_backoff") {
                ++backoffs;
                QCOMPARE(e.step, int64_t(1));  // during step 2 (0-based 1)
                QVERIFY2(QString::fromStdString(e.message).contains("micro_batch_size 8 -> 4"), e.message.c_str());
            }
        QCOMPARE(backoffs, 1);
        // Every step is logged once, and the losses are those of a run started at m = 4.
        QCOMPARE(backed.losses.size(), small.losses.size());
        for (size_t i = 0; i < small.losses.size(); ++i)
            QVERIFY2(std::fabs(backed.losses[i] - small.losses[i]) <= 1e-5 * std::fabs(small.losses[i]),
                     qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(backed.losses[i]).arg(small.losses[i])));
    }

    // Sharded stages under an out-of-memory back-off: stage 1 agrees it at the window's end;
    // stage 2 reduce-scatters every micro-batch, stage 3 also all-gathers every unit in its
    // forward and backward: a rank that runs out of memory in its first micro-batch still makes
    // the calls it has left and those of the micro-batches it skips, so the other rank is not
    // left waiting; both drop the window, back off and redo it at m = 4, to the losses of m = 4.
    void shardedStagesBackOffWithoutLeavingARankWaiting_data() {
        QTest::addColumn<int>("stage");
        QTest::newRow("stage 1") << 1;
        QTest::newRow("stage 2") << 2;
        QTest::newRow("stage 3") << 3;
    }
    void shardedStagesBackOffWithoutLeavingARankWaiting() {
        QFETCH(int, stage);
        auto split = [stage](int64_t m, int64_t K, int64_t steps) {
            RunConfig c = tinySplit(m, K, steps);
            c.runtime.world_size = 2;
            c.runtime.zero_stage = stage;
            return c;
        };
        const int64_t first8 = train(split(8, 2, 1)).summary.peak_memory_bytes;
        const Trained small = train(split(4, 4, 3));
        RunConfig limited = split(8, 2, 3);
        limited.runtime.memory_limit_mb = small.summary.peak_memory_bytes / (1 << 20) + 1;
        QVERIFY2(limited.runtime.memory_limit_mb * (1 << 20) < first8,
                 qPrintable(QString("%1 %2").arg(small.summary.peak_memory_bytes).arg(first8)));
        const Trained backed = train(limited);
        QCOMPARE(backed.summary.status, RunStatus::Completed);
        QCOMPARE(backed.summary.micro_batch_size, int64_t(4));
        QCOMPARE(backed.summary.gradient_accumulation_steps, int64_t(4));
        int backoffs = 0;
        for (const auto& e : backed.events) backoffs += e.kind == "oom_backoff" ? 1 : 0;
        QCOMPARE(backoffs, 1);
        QCOMPARE(backed.losses.size(), small.losses.size());
        for (size_t i = 0; i < small.losses.size(); ++i)
            QVERIFY2(std::fabs(backed.losses[i] - small.losses[i]) <= 1e-5 * std::fabs(small.losses[i]),
                     qPrintable(QString("step %1: %2 vs %3").arg(i + 1).arg(backed.losses[i]).arg(small.losses[i])));
    }

    void aBudgetBelowMicroBatchOneIsRefusedBeforeTraining() {
        RunConfig c = tinySplit(1, 2, 3);
        c.runtime.memory_limit_mb = 1;  // below the weights, gradients and moments of the tiny model
        try {
            TrainingSession session(c);
            QFAIL("a config that cannot fit its budget was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.path()), QString("runtime.memory_limit_mb"));
            QVERIFY2(QString(e.what()).contains("micro_batch_size 1") && QString(e.what()).contains("MiB"), e.what());
        }
    }

    void aConfigLargerThanTheDeviceIsRefusedWithWhatFits() {
        RunConfig c = tinySplit(16, 1, 1);
        const MemoryPlan at4 = planMemory(tinySplit(4, 4, 1)), at8 = planMemory(tinySplit(8, 2, 1));
        try {
            requirePlanFits(c, (at4.peak_bytes + at8.peak_bytes) / 2);
            QFAIL("a config larger than the device was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.path()), QString("train.micro_batch_size"));
            QVERIFY2(QString(e.what()).contains("--set train.micro_batch_size=4 --set train.gradient_accumulation_steps=4"),
                     e.what());
        }
        requirePlanFits(c, 0);                    // unknown device memory: no check
        requirePlanFits(c, at8.peak_bytes * 10);  // plenty
    }

    // CPU ranks have one memory: what offload moves to the host tier still counts against
    // runtime.memory_limit_mb. A budget above the device peak but below the peak plus the host
    // tier is refused before training (it used to start and fail out of memory), naming both.
    void aBudgetOnCpuRanksCountsTheOffloadedState() {
        RunConfig c = tinySplit(1, 2, 1);
        c.runtime.world_size = 2;
        c.runtime.zero_stage = 3;
        c.runtime.offload = "all";
        c.runtime.activation_checkpointing = "full";
        c.model.dim = 512;  // state large beside the activations: megabytes on the host tier
        const MemoryPlan plan = planMemory(c);
        QVERIFY(plan.host_bytes > 2 * 1024 * 1024);  // the moments and master, well above a MiB's rounding
        auto mib = [](int64_t bytes) { return (bytes + (1 << 20) - 1) >> 20; };
        c.runtime.memory_limit_mb = mib(plan.peak_bytes) + 1;  // the device peak fits, the host tier beside it not
        QVERIFY((c.runtime.memory_limit_mb << 20) < plan.peak_bytes + plan.host_bytes);
        try {
            requirePlanFits(c, 0);
            QFAIL("a budget the host tier overflows was accepted on CPU ranks");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.path()), QString("runtime.memory_limit_mb"));
            QVERIFY2(QString(e.what()).contains("shares that memory on CPU ranks") && QString(e.what()).contains("offload_dir"),
                     e.what());
        }
        c.runtime.memory_limit_mb = mib(plan.peak_bytes + plan.host_bytes) + 1;
        requirePlanFits(c, 0);
    }
};

QTEST_APPLESS_MAIN(TestMemory)
#include "test_memory.moc"
