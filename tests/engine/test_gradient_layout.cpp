// The layout seam on its own (parallel/gradient_layout.h), driven by hand on rank threads:
// each implementation's first AdamW step and gradient norm against the same step written out
// in fp64 from one whole model, its rules (stops, out-of-memory, evaluation), and the calls a
// rank that leaves a window early still makes (docs/design/layouts.md).
#include <QtTest/QtTest>

#include <cmath>
#include <map>
#include <thread>

#include "cpu_paths_report.h"
#include "conformance_setup.h"
#include "parallel/adamw_state.h"
#include "parallel/gradient_layout.h"
#include "rank_threads.h"

using namespace trainbench;

namespace {

constexpr double kLr = 1e-2;
constexpr double kDecay = 0.1;

RunConfig layoutConfig(int64_t W, int64_t stage, int64_t expert_parallel) {
    RunConfig c = withSplit(conformanceConfig(), 2, 1, W);
    c.runtime.zero_stage = stage;
    c.runtime.expert_parallel = expert_parallel;
    c.train.weight_decay = kDecay;
    return c;
}

Transformer freshModel(const RunConfig& c) {
    Transformer model(c.model);
    initializeWeights(model, 7);
    model->to(torch::kFloat64);
    model->train();
    return model;
}

// Rank r's micro-batch: its own tokens, the same on every run.
std::pair<torch::Tensor, torch::Tensor> batchOf(const RunConfig& c, int rank) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(100 + rank);
    auto tokens = torch::randint(c.model.vocab_size, {c.train.micro_batch_size, c.train.seq_len + 1}, generator);
    return {tokens.narrow(1, 0, c.train.seq_len).contiguous(), tokens.narrow(1, 1, c.train.seq_len).contiguous()};
}

// Rank r's layout setup over the groups a session would make for `c`.
LayoutSetup setupFor(const RunConfig& c, RankGroups& groups, int r) {
    LayoutSetup setup;
    setup.config = &c;
    setup.rank = r;
    setup.world_size = static_cast<int>(c.runtime.world_size);
    setup.collectives = groups.world[r].get();
    setup.placement = placementFor(c, PlacementQuery{});
    if (c.runtime.expert_parallel > 1) {
        setup.expert_collectives = groups.experts[r].get();
        setup.replica_collectives = groups.replicas[r].get();
    }
    return setup;
}

// What every rank ends with, and what it saw.
struct Outcome {
    std::vector<std::vector<torch::Tensor>> weights;  // per rank, whole, model order
    std::vector<std::vector<std::string>> names;      // per rank: their names (its own experts only)
    std::vector<double> squares;                       // per rank: the summed group squares
    std::vector<int64_t> calls;                        // per rank: collective calls made
};

// One window of one micro-batch per rank through the layout's hooks, then one step dividing by N.
Outcome stepOnce(const RunConfig& c) {
    const int W = static_cast<int>(c.runtime.world_size), EP = static_cast<int>(c.runtime.expert_parallel);
    RankGroups groups(W, EP);
    Outcome out;
    out.weights.resize(W);
    out.names.resize(W);
    out.squares.resize(W);
    out.calls.resize(W);
    // N over every rank: counted before any thread starts (every target counts here).
    const double N = double(W * c.train.micro_batch_size * c.train.seq_len);
    std::vector<std::thread> threads;
    std::vector<std::string> errors(W);
    for (int r = 0; r < W; ++r)
        threads.emplace_back([&, r] {
            try {
                Transformer model = freshModel(c);
                LayoutSetup setup = setupFor(c, groups, r);
                setup.bucket_bytes = setup.first_bucket_bytes = 4096;  // slices cross parameters
                auto layout = makeGradientLayout(setup, model, nullptr);
                layout->beginWindow();
                layout->beginMicroBatch(/*last=*/true);
                auto [tokens, targets] = batchOf(c, r);
                LossParts parts = model->loss(tokens, targets);
                layout->beforeBackward(true);
                (parts.token_loss_sum + parts.aux_loss_sum).backward();
                layout->endMicroBatch();
                layout->closeMicroBatches(1);
                layout->reduceWindow();
                const std::vector<int> group_of_param(model->parameters().size(), 0);
                out.squares[r] = layout->groupSquares(group_of_param, 1).squares.sum().item<double>();
                layout->step(kLr, N);
                out.weights[r] = layout->wholeParameters();
                out.names[r] = parameterNames(model);
                for (Collectives* g : {setup.collectives, setup.expert_collectives, setup.replica_collectives})
                    if (g) out.calls[r] += g->calls();
            } catch (const std::exception& e) {
                errors[r] = e.what();
                groups.world[r]->abort(e.what());
            }
        });
    for (auto& t : threads) t.join();
    for (int r = 0; r < W; ++r)
        if (!errors[r].empty()) qFatal("rank %d: %s", r, errors[r].c_str());
    return out;
}

// The same step written out: one whole model sees every rank's micro-batch; AdamW's first step
// from zero moments is p (1 - lr decay) - lr g / (|g| + eps), g the mean gradient.
struct Reference {
    std::map<std::string, torch::Tensor> weights;  // by parameter name
    double squares = 0;  // |sum of the gradients|^2
};

Reference referenceStep(const RunConfig& c) {
    Transformer model = freshModel(c);
    const int W = static_cast<int>(c.runtime.world_size);
    double N = 0;
    for (int r = 0; r < W; ++r) {
        auto [tokens, targets] = batchOf(c, r);
        LossParts parts = model->loss(tokens, targets);
        (parts.token_loss_sum + parts.aux_loss_sum).backward();
        N += parts.token_count.item<double>();
    }
    Reference ref;
    const std::vector<bool> decays = parameterDecays(model);
    const auto params = model->parameters();
    const auto names = parameterNames(model);
    for (size_t i = 0; i < params.size(); ++i) {
        torch::NoGradGuard no_grad;
        const auto sum = params[i].grad();
        ref.squares += sum.square().sum().item<double>();
        const auto g = sum / N;
        const double decay = decays[i] ? kDecay : 0.0;
        ref.weights[names[i]] = params[i] * (1 - kLr * decay) - kLr * g / (g.abs() + 1e-8);
    }
    return ref;
}

// Over a rank's parameters (under expert parallelism its own experts, named by their global index).
double largestDifference(const std::vector<torch::Tensor>& got, const std::vector<std::string>& names,
                         const std::map<std::string, torch::Tensor>& want) {
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, (got[i] - want.at(names[i])).abs().max().item<double>());
    return worst;
}

}  // namespace

class TestGradientLayout : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void eachLayoutTakesTheWrittenOutFirstStep_data() {
        QTest::addColumn<int>("world");
        QTest::addColumn<int>("stage");
        QTest::addColumn<int>("expert_parallel");
        QTest::newRow("replicated, one rank") << 1 << 0 << 1;
        QTest::newRow("replicated") << 2 << 0 << 1;
        QTest::newRow("stage 1") << 2 << 1 << 1;
        QTest::newRow("stage 2") << 2 << 2 << 1;
        QTest::newRow("stage 3") << 2 << 3 << 1;
        QTest::newRow("experts at stage 0") << 2 << 0 << 2;
        QTest::newRow("experts at stage 1") << 4 << 1 << 2;
        QTest::newRow("experts at stage 3") << 4 << 3 << 2;
    }
    void eachLayoutTakesTheWrittenOutFirstStep() {
        QFETCH(int, world);
        QFETCH(int, stage);
        QFETCH(int, expert_parallel);
        const RunConfig c = layoutConfig(world, stage, expert_parallel);
        const Outcome got = stepOnce(c);
        const Reference want = referenceStep(c);
        for (int r = 0; r < world; ++r) {
            QVERIFY2(std::fabs(got.squares[r] - want.squares) <= 1e-10 * want.squares,
                     qPrintable(QString("rank %1: squares %2 vs %3").arg(r).arg(got.squares[r], 0, 'g', 15)
                                    .arg(want.squares, 0, 'g', 15)));
            QCOMPARE(got.weights[r].size(), got.names[r].size());
            const size_t routed_elsewhere = expert_parallel > 1 ? want.weights.size() - got.names[r].size() : 0;
            QCOMPARE(got.weights[r].size() + routed_elsewhere, want.weights.size());
            const double worst = largestDifference(got.weights[r], got.names[r], want.weights);
            QVERIFY2(worst < 1e-12, qPrintable(QString("rank %1: weights differ by %2").arg(r).arg(worst)));
        }
    }

    // Every rank of a world makes the same number of collective calls (they pair up).
    void everyRankMakesTheSameCalls() {
        for (int stage : {0, 1, 2, 3}) {
            const Outcome got = stepOnce(layoutConfig(2, stage, 1));
            QCOMPARE(got.calls[1], got.calls[0]);
            QVERIFY(got.calls[0] > 0);
        }
    }

    // What each layout promises the window: how a stop ends it, whether out of memory is
    // recoverable, who evaluates, whether it names an expert group.
    void eachLayoutStatesItsRules() {
        struct Case {
            int world, stage, ep;
            StopRule stop;
            bool recovers, every_rank_evaluates, experts;
        };
        for (const Case& k : std::vector<Case>{
                 {2, 0, 1, StopRule::EndsAlone, true, false, false},
                 {2, 1, 1, StopRule::AgreedAfterLeaving, true, false, false},
                 {2, 2, 1, StopRule::AgreedAfterLeaving, true, false, false},
                 {2, 3, 1, StopRule::AgreedAfterLeaving, true, true, false},
                 {2, 0, 2, StopRule::AgreedAtWindowEnd, false, true, true},
                 {2, 2, 2, StopRule::AgreedAtWindowEnd, false, true, true},
             }) {
            const RunConfig c = layoutConfig(k.world, k.stage, k.ep);
            RankGroups groups(k.world, k.ep);
            std::vector<std::thread> threads;
            std::vector<int> mismatches(k.world, 0);
            for (int r = 0; r < k.world; ++r)
                threads.emplace_back([&, r] {
                    Transformer model = freshModel(c);
                    const LayoutSetup setup = setupFor(c, groups, r);
                    auto layout = makeGradientLayout(setup, model, nullptr);
                    mismatches[r] = (layout->stopRule() != k.stop) + (layout->recoversFromOutOfMemory() != k.recovers) +
                                    (layout->modelDivided() != k.every_rank_evaluates) +
                                    ((layout->expertGroup() != nullptr) != k.experts) +
                                    (layout->routedExpertMask().empty() == k.experts);
                });
            for (auto& t : threads) t.join();
            for (int r = 0; r < k.world; ++r)
                QVERIFY2(mismatches[r] == 0, qPrintable(QString("stage %1, EP %2, rank %3: %4 rules differ")
                                                            .arg(k.stage).arg(k.ep).arg(r).arg(mismatches[r])));
        }
    }

    // At stages 2 and 3 a rank that leaves a window of K micro-batches early still makes every
    // micro-batch's reduce-scatters (of zeros) in closeMicroBatches: the other rank, which runs
    // all K, finishes, and both count the same calls; the sums are what the full rank sent.
    void aRankLeavingEarlyStillPairsItsCalls() {
        for (int stage : {2, 3}) {
            const RunConfig c = layoutConfig(2, stage, 1);
            RankGroups groups(2, 1);
            std::vector<int64_t> calls(2, 0);
            std::vector<double> squares(2, 0);
            std::vector<std::thread> threads;
            for (int r = 0; r < 2; ++r)
                threads.emplace_back([&, r] {
                    Transformer model = freshModel(c);
                    const LayoutSetup setup = setupFor(c, groups, r);
                    auto layout = makeGradientLayout(setup, model, nullptr);
                    const int64_t K = 3;
                    layout->beginWindow();
                    const int64_t run = r == 0 ? K : 1;  // rank 1 leaves after its first micro-batch
                    for (int64_t k = 0; k < run; ++k) {
                        layout->beginMicroBatch(k + 1 == K);
                        auto [tokens, targets] = batchOf(c, r);
                        LossParts parts = model->loss(tokens, targets);
                        layout->beforeBackward(k + 1 == K);
                        (parts.token_loss_sum + parts.aux_loss_sum).backward();
                        layout->endMicroBatch();
                    }
                    layout->closeMicroBatches(K);
                    layout->reduceWindow();
                    const std::vector<int> group_of_param(model->parameters().size(), 0);
                    squares[r] = layout->groupSquares(group_of_param, 1).squares.sum().item<double>();
                    calls[r] = groups.world[r]->calls();
                });
            for (auto& t : threads) t.join();
            QCOMPARE(calls[1], calls[0]);
            QVERIFY(squares[0] > 0);
            QCOMPARE(squares[1], squares[0]);  // the same global sums on both ranks
        }
    }
};

QTEST_GUILESS_MAIN(TestGradientLayout)
#include "test_gradient_layout.moc"
