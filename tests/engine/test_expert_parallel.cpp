// Expert parallelism suite (docs/design/layouts.md section 4): the all-to-all and its backward by hand;
// runtime.expert_parallel 2 and 4 at W = 4 against plain data parallelism (EP 1), step by step:
// losses, gradient norms and expert loads in fp32, the weights in fp64, with group-limited
// routing, an incomplete last window, ZeRO stages 1 to 3 and ranks whose experts no token reaches;
// the collectives per step; checkpoints that resume at another EP and stage; refused settings.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <cmath>
#include <map>

#include "cpu_paths_report.h"
#include "conformance_setup.h"
#include "model/all_to_all.h"
#include "rank_threads.h"
#include "stop_and_resume.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

// Four routed experts (one or two per rank at EP 4 or 2), two of them per token.
RunConfig moeConfig(int64_t m, int64_t K, int64_t W, int64_t EP) {
    RunConfig c = withSplit(conformanceConfig(), m, K, W);
    c.runtime.expert_parallel = EP;
    c.train.weight_decay = 0.1;
    c.train.eval_every = 0;
    return c;
}

struct Series {
    std::vector<double> loss, grad_norm, collectives, eval;
    std::map<std::string, std::vector<double>> loads;     // moe/layer.../tokens per step
    std::map<std::string, std::vector<double>> received;  // moe/rank<r>/tokens_received per step
    RunSummary summary;
};

Series train(const RunConfig& config, SessionOptions options = {}) {
    TrainingSession session(config, options);
    auto inbox = session.bus().subscribe();
    session.start();
    if (!session.wait(std::chrono::minutes(5))) qFatal("run did not finish");
    Series s;
    s.summary = session.summary();
    if (s.summary.status != RunStatus::Completed) qFatal("run ended: %s", s.summary.error.c_str());
    for (const auto& p : inbox->drain().points) {
        if (p.key == "train/loss") s.loss.push_back(p.value);
        if (p.key == "train/grad_norm") s.grad_norm.push_back(p.value);
        if (p.key == "comm/collectives") s.collectives.push_back(p.value);
        if (p.key == "eval/loss") s.eval.push_back(p.value);
        if (p.key.rfind("moe/layer", 0) == 0 && p.key.find("/tokens") != std::string::npos) s.loads[p.key].push_back(p.value);
        if (p.key.rfind("moe/rank", 0) == 0) s.received[p.key].push_back(p.value);
    }
    return s;
}

double relative(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

void compareSeries(const Series& s, const Series& reference, double tolerance, const QString& what) {
    QCOMPARE(s.loss.size(), reference.loss.size());
    QVERIFY(!reference.loss.empty());
    for (size_t i = 0; i < reference.loss.size(); ++i) {
        QVERIFY2(relative(s.loss[i], reference.loss[i]) < tolerance,
                 qPrintable(QString("%1 step %2 loss %3 vs %4").arg(what).arg(i + 1).arg(s.loss[i], 0, 'g', 12)
                                .arg(reference.loss[i], 0, 'g', 12)));
        QVERIFY2(relative(s.grad_norm[i], reference.grad_norm[i]) < tolerance,
                 qPrintable(QString("%1 step %2 grad norm %3 vs %4").arg(what).arg(i + 1)
                                .arg(s.grad_norm[i], 0, 'g', 12).arg(reference.grad_norm[i], 0, 'g', 12)));
    }
    QCOMPARE(s.eval.size(), reference.eval.size());
    for (size_t i = 0; i < reference.eval.size(); ++i)
        QVERIFY2(relative(s.eval[i], reference.eval[i]) < tolerance, qPrintable(what + " eval loss"));
    // The loads are counts of the same routing decisions: equal.
    QVERIFY(!reference.loads.empty());
    QCOMPARE(s.loads.size(), reference.loads.size());
    for (const auto& [key, values] : reference.loads)
        QVERIFY2(s.loads.at(key) == values, qPrintable(what + " " + QString::fromStdString(key)));
}

// Every rank's parameters by name after `steps` steps on rank threads, fp64; `prepare` may
// change each rank's model first (the same way on every rank).
std::vector<std::map<std::string, torch::Tensor>> weightsAfter(const RunConfig& config, int64_t steps,
                                                               const std::function<void(Transformer&)>& prepare = {}) {
    std::vector<std::map<std::string, torch::Tensor>> out(config.runtime.world_size);
    RankThreadOptions options;
    options.fp64 = true;
    onRankTrainers(config, options, [&](int r, RankTrainer& trainer) {
        if (prepare) prepare(trainer.model());
        for (int64_t step = 0; step < steps; ++step) {
            WindowResult window;
            if (trainer.accumulateWindow(step, window) != WindowOutcome::Complete) throw std::runtime_error("window");
            trainer.applyUpdate(step, window);
        }
        // Whole, also where stage 3 holds slices (every rank gathers).
        const auto whole = trainer.wholeParameters();
        size_t i = 0;
        for (const auto& item : trainer.model()->named_parameters()) out[r][item.key()] = whole[i++];
    });
    return out;
}

}  // namespace

class TestExpertParallel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Three ranks, fp64. Rank r has rows r*10 + i; it sends send[r][d] of them to rank d in
    // order. The result on rank d is what each rank s sent it, in rank order; its backward takes
    // each row's gradient back to the rank and row it came from.
    void theAllToAllMovesRowsAndTheirGradientsBack() {
        const int W = 3;
        const std::vector<std::vector<int64_t>> send{{1, 2, 0}, {0, 1, 3}, {2, 0, 1}};
        std::vector<torch::Tensor> outputs(W), grads(W);
        const std::vector<std::string> errors = onCollectiveThreads(W, [&](int r, InProcessCollectives& group) {
            int64_t rows = 0;
            for (int64_t n : send[r]) rows += n;
            std::vector<double> values;
            for (int64_t i = 0; i < rows; ++i) values.insert(values.end(), {r * 10.0 + i, -(r * 10.0 + i)});
            auto x = torch::tensor(values, torch::kFloat64).view({rows, 2}).requires_grad_(true);
            std::vector<int64_t> recv(W);
            for (int s = 0; s < W; ++s) recv[s] = send[s][r];
            auto y = allToAll(x, send[r], recv, group);
            outputs[r] = y.detach().clone();
            // Row j of y weighs 100 * (r + 1) + j in the loss: its gradient says where it landed.
            auto weight = (100.0 * (r + 1) + torch::arange(y.size(0), torch::kFloat64)).unsqueeze(1);
            (y * weight).sum().backward();
            grads[r] = x.grad().clone();
        });
        for (const auto& e : errors) QVERIFY2(e.empty(), e.c_str());
        // By hand: rank 0 gets row 0 of rank 0 and rows 0-1 of rank 2; rank 1 rows 1-2 of rank 0
        // and row 0 of rank 1; rank 2 rows 1-3 of rank 1 and row 2 of rank 2.
        const std::vector<std::vector<double>> firsts{{0, 20, 21}, {1, 2, 10}, {11, 12, 13, 22}};
        for (int d = 0; d < W; ++d) {
            QCOMPARE(outputs[d].size(0), int64_t(firsts[d].size()));
            for (size_t j = 0; j < firsts[d].size(); ++j) {
                QCOMPARE(outputs[d][j][0].item<double>(), firsts[d][j]);
                QCOMPARE(outputs[d][j][1].item<double>(), -firsts[d][j]);
            }
        }
        // Gradients: row i of rank s landed on rank d at row j: 100 (d + 1) + j, both columns.
        const std::vector<std::vector<double>> expected{{100, 200, 201}, {202, 300, 301, 302}, {101, 102, 303}};
        for (int s = 0; s < W; ++s)
            for (size_t i = 0; i < expected[s].size(); ++i) {
                QCOMPARE(grads[s][i][0].item<double>(), expected[s][i]);
                QCOMPARE(grads[s][i][1].item<double>(), expected[s][i]);
            }
    }

    // The splits (2,2,4) and (1,4,4) of B = 16 at EP 2 and 4 log EP 1's losses, gradient norms
    // and expert loads at every step; also with group-limited routing and an incomplete last
    // window (train.samples: three windows and one micro-batch per rank), under ZeRO stage 1 and
// with recomputation (the exchanges run again in the backward), and evaluated.
    void expertParallelGivesDataParallelNumbers_data() {
        QTest::addColumn<int>("m");
        QTest::addColumn<int>("K");
        QTest::addColumn<QString>("variant");
        QTest::newRow("2 x 2 x 4") << 2 << 2 << "";
        QTest::newRow("1 x 4 x 4") << 1 << 4 << "";
        QTest::newRow("2 x 2 x 4, group-limited") << 2 << 2 << "groups";
        QTest::newRow("1 x 4 x 4, incomplete last window") << 1 << 4 << "incomplete";
        QTest::newRow("2 x 2 x 4, zero stage 1") << 2 << 2 << "stage 1";
        QTest::newRow("2 x 2 x 4, blocks recomputed") << 2 << 2 << "recompute";
        QTest::newRow("2 x 2 x 4, feed-forward parts recomputed, evaluated") << 2 << 2 << "feedforward";
        QTest::newRow("1 x 4 x 4, zero stage 1") << 1 << 4 << "stage 1";
        QTest::newRow("2 x 2 x 4, zero stage 2") << 2 << 2 << "stage 2";
        QTest::newRow("2 x 2 x 4, zero stage 3") << 2 << 2 << "stage 3";
        QTest::newRow("1 x 4 x 4, zero stage 3, incomplete last window, evaluated") << 1 << 4 << "stage 3 incomplete";
        QTest::newRow("2 x 2 x 4, zero stage 3, blocks recomputed") << 2 << 2 << "stage 3 recompute";
    }
    void expertParallelGivesDataParallelNumbers() {
        QFETCH(int, m);
        QFETCH(int, K);
        QFETCH(QString, variant);
        auto config = [&](int64_t EP) {
            RunConfig c = moeConfig(m, K, 4, EP);
            if (variant == "groups") c.model.n_expert_groups = 2, c.model.n_limited_groups = 1;
            if (variant == "incomplete") c.train.samples = 3 * 16 + 4;
            if (variant == "stage 1" && EP > 1) c.runtime.zero_stage = 1;  // against plain data parallelism
            if (variant == "stage 2" && EP > 1) c.runtime.zero_stage = 2;
            if (variant.startsWith("stage 3") && EP > 1) c.runtime.zero_stage = 3;
            if (variant == "stage 3 incomplete") c.train.samples = 3 * 16 + 4, c.train.eval_every = 2;
            if (variant == "stage 3 recompute" && EP > 1) c.runtime.activation_checkpointing = "full";
            if (variant == "recompute" && EP > 1) c.runtime.activation_checkpointing = "full";
            if (variant == "feedforward") {
                if (EP > 1) c.runtime.activation_checkpointing = "feedforward";
                c.train.eval_every = 2;  // every rank evaluates under EP: the same validation loss
            }
            return c;
        };
        const Series reference = train(config(1));
        QVERIFY(reference.received.empty());
        for (int64_t EP : {2, 4}) {
            const Series s = train(config(EP));
            compareSeries(s, reference, 1e-5, QString("EP %1").arg(EP));
            // Every routed slot is received by one rank: the ranks' rows add up to the loads.
            QCOMPARE(s.received.size(), size_t(4));
            for (size_t step = 0; step < s.loss.size(); ++step) {
                double received = 0, routed = 0;
                for (const auto& [key, values] : s.received) received += values.at(step);
                for (const auto& [key, values] : s.loads) routed += values.at(step);
                QCOMPARE(received, routed);
            }
        }
    }

    // fp64 weights after three steps at EP 4 and 2 equal EP 1's on every rank, each rank holding
    // its own experts only; also when the gate's bias sends every token to experts 0 and 1, so
    // that at EP 4 ranks 2 and 3 receive no token at all.
    void theWeightsMatchInFp64_data() {
        QTest::addColumn<bool>("starve");
        QTest::addColumn<int>("stage");
        QTest::newRow("every expert reached") << false << 0;
        QTest::newRow("experts 2 and 3 never reached") << true << 0;
        QTest::newRow("zero stage 1") << false << 1;
        QTest::newRow("zero stage 2, experts 2 and 3 never reached") << true << 2;
        QTest::newRow("zero stage 3") << false << 3;
        QTest::newRow("zero stage 3, experts 2 and 3 never reached") << true << 3;
    }
    void theWeightsMatchInFp64() {
        QFETCH(bool, starve);
        QFETCH(int, stage);
        auto prepare = [&](Transformer& model) {
            if (!starve) return;
            torch::NoGradGuard no_grad;
            for (auto& moe : model->moeLayers()) moe->gate->bias.narrow(0, 2, 2).fill_(-100.0);
        };
        const auto reference = weightsAfter(moeConfig(2, 2, 4, 1), 3, prepare);
        for (int64_t EP : {2, 4}) {
            RunConfig config = moeConfig(2, 2, 4, EP);
            config.runtime.zero_stage = stage;
            const auto weights = weightsAfter(config, 3, prepare);
            for (int r = 0; r < 4; ++r) {
                int64_t experts_held = 0;
                for (const auto& [name, tensor] : weights[r]) {
                    if (name.find(".experts.") != std::string::npos && name.find(".w1.") != std::string::npos) ++experts_held;
                    const double scale = reference[r].at(name).abs().max().item<double>() + 1e-30;
                    const double diff = (tensor - reference[r].at(name)).abs().max().item<double>();
                    QVERIFY2(diff / scale < 1e-10, qPrintable(QString("EP %1 rank %2 %3: %4").arg(EP).arg(r)
                                                                  .arg(QString::fromStdString(name)).arg(diff / scale)));
                }
                QCOMPARE(experts_held, 4 / EP);  // one MoE layer
            }
        }
    }

    // The gradient noise scale under expert parallelism, fp64, W 2 K 2: the groups without routed
    // experts (attention, dense MLP, embeddings) have EP 1's small batches and so its parts; the
    // routed experts' small batches are the unions of both ranks' micro-batch k. With rank 1's
    // targets all ignored those unions are rank 0's micro-batches, which are then EP 1's small
    // batches too (rank 1's count for nothing): every group's parts and the total equal EP 1's.
    void theNoiseScaleUnderExpertParallelism_data() {
        QTest::addColumn<bool>("rank1_empty");
        QTest::newRow("every rank counts") << false;
        QTest::newRow("rank 1 counts nothing") << true;
    }
    void theNoiseScaleUnderExpertParallelism() {
        QFETCH(bool, rank1_empty);
        auto window = [&](int64_t EP) {
            std::vector<WindowResult> out(2);
            RankThreadOptions options;
            options.fp64 = true;
            if (rank1_empty)
                options.edit_micro_batch = [](int rank, int64_t, int64_t, MicroBatch& batch) {
                    if (rank == 1) batch.targets.fill_(-1);
                };
            onRankTrainers(moeConfig(2, 2, 2, EP), options, [&](int r, RankTrainer& trainer) {
                if (trainer.accumulateWindow(0, out[r]) != WindowOutcome::Complete) throw std::runtime_error("window");
            });
            return out[0];
        };
        const WindowResult reference = window(1), divided = window(2);
        QVERIFY(reference.noise && divided.noise);
        auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(b), 1e-12); };
        for (size_t g : {size_t(0), size_t(3)}) {  // attention, embeddings
            QVERIFY(divided.noise_groups[g] && reference.noise_groups[g]);
            QVERIFY2(close(divided.noise_groups[g]->grad_sq, reference.noise_groups[g]->grad_sq), qPrintable(QString::number(g)));
            QVERIFY(close(divided.noise_groups[g]->trace, reference.noise_groups[g]->trace));
        }
        QVERIFY(divided.noise_groups[2].has_value() && std::isfinite(divided.noise->grad_sq));
        if (rank1_empty) {
            QVERIFY2(close(divided.noise_groups[2]->grad_sq, reference.noise_groups[2]->grad_sq),
                     qPrintable(QString("%1 vs %2").arg(divided.noise_groups[2]->grad_sq, 0, 'g', 15)
                                    .arg(reference.noise_groups[2]->grad_sq, 0, 'g', 15)));
            QVERIFY(close(divided.noise_groups[2]->trace, reference.noise_groups[2]->trace));
            QVERIFY(close(divided.noise->grad_sq, reference.noise->grad_sq));
            QVERIFY(close(divided.noise->trace, reference.noise->trace));
        } else {
            // Other small batches for the experts: another estimate of the same quantities.
            QVERIFY(!close(divided.noise_groups[2]->trace, reference.noise_groups[2]->trace));
        }
    }

    // Per step at EP 2 and W 4: the dense buckets and one statistics all-reduce (world), per
    // MoE layer and micro-batch three exchanges forward (the counts, the tokens, back) and two
    // backward, one all-reduce of the experts' squared norms (expert group), and one all-reduce
    // per expert bucket (replica group).
    // At stage 1 the buckets are reduce-scattered and all-gathered (each set over its ranks) and
    // the slices' squared norms summed three times (world, replicas, expert group); at stage 2
    // every micro-batch's buckets are reduce-scattered.
    void theCollectivesPerStepAreCounted_data() {
        QTest::addColumn<int>("stage");
        QTest::newRow("stage 0") << 0;
        QTest::newRow("stage 1") << 1;
        QTest::newRow("stage 2") << 2;
        QTest::newRow("stage 3") << 3;
    }
    void theCollectivesPerStepAreCounted() {
        QFETCH(int, stage);
        RunConfig config = moeConfig(2, 2, 4, 2);
        config.runtime.zero_stage = stage;
        onRankTrainers(config, RankThreadOptions{}, [&](int, RankTrainer& trainer) {
            WindowResult window;
            if (trainer.accumulateWindow(0, window) != WindowOutcome::Complete) throw std::runtime_error("window");
            const int64_t calls_before_update = trainer.callsMade();
            trainer.applyUpdate(0, window);
            window.collectives += trainer.callsMade() - calls_before_update;
            const int64_t moe_layers = static_cast<int64_t>(trainer.model()->moeLayers().size());
            const int64_t dense = trainer.bucketCount(), experts = trainer.expertBucketCount();
            const int64_t exchanges = 5 * moe_layers * 2 + 1;  // + the noise scale's all-reduce in the group
            // Stage 3, per micro-batch: every unit (embedding, blocks, head) gathered before its
            // forward and, but the embedding, before its backward, and reduce-scattered, over the
            // world; the MoE block's experts the same three times over the replicas.
            const int64_t units = trainer.model()->units().size();
            const int64_t expected = stage == 0   ? dense + 1 + exchanges + 1 + experts
                                     : stage == 1 ? 2 * dense + 1 + exchanges + 3 + 2 * experts
                                     : stage == 2 ? 3 * (dense + experts) + 1 + exchanges + 3  // K + 1 = 3 rounds
                                                  : 2 * (3 * units - 1 + 3 * moe_layers) + 1 + exchanges + 3;
            if (planMemory(config).collectives_per_step != expected)
                throw std::runtime_error("the planner counts " + std::to_string(planMemory(config).collectives_per_step));
            if (window.collectives != expected)
                throw std::runtime_error("collectives " + std::to_string(window.collectives) + ", expected " +
                                         std::to_string(expected));
        });
    }

    // A run stopped after two steps at EP 4 (stage 1) resumes at EP 1, at EP 2 (W 2), at EP 2
    // with stage 1 and at EP 2 with stage 3 from its checkpoint, which holds every expert and every moment under its own
    // name: the uninterrupted run's losses.
    void aCheckpointResumesAtAnotherExpertParallelism() {
        RunConfig config = moeConfig(2, 2, 4, 4);
        config.runtime.zero_stage = 1;
        config.train.steps = 4;
        const Series whole = train(config);
        QTemporaryDir dir;
        SessionOptions first;
        first.checkpoint_dir = dir.path().toStdString();
        RunConfig two = config;
        two.train.steps = 2;
        train(two, first);
        std::vector<std::string> skipped;
        const auto checkpoint = checkpointToResume(first.checkpoint_dir, skipped);
        QVERIFY(checkpoint.has_value());
        for (const auto& [m, W, EP, stage] :
             std::vector<std::array<int64_t, 4>>{{2, 4, 1, 0}, {4, 2, 2, 0}, {2, 4, 2, 1}, {2, 4, 2, 3}}) {
            RunConfig resumed = moeConfig(m, 2, W, EP);
            resumed.runtime.zero_stage = stage;
            resumed.train.steps = 4;
            SessionOptions resume;
            resume.resume_from = checkpoint->path;
            const Series rest = train(resumed, resume);
            QCOMPARE(rest.loss.size(), size_t(2));
            for (size_t i = 0; i < 2; ++i)
                QVERIFY2(relative(rest.loss[i], whole.loss[i + 2]) < 1e-6,
                         qPrintable(QString("W %1 EP %2 step %3: %4 vs %5").arg(W).arg(EP).arg(i + 3)
                                        .arg(rest.loss[i], 0, 'g', 12).arg(whole.loss[i + 2], 0, 'g', 12)));
        }
    }

    // A stop under expert parallelism is agreed at the window's end (the other ranks of a group
    // need this rank's micro-batches in their exchanges), and leaves a checkpoint to resume.
    void aStopIsAgreedAndCheckpointed_data() {
        QTest::addColumn<int>("stage");
        QTest::newRow("stage 0") << 0;
        QTest::newRow("stage 1") << 1;
        QTest::newRow("stage 3") << 3;
    }
    void aStopIsAgreedAndCheckpointed() {
        QFETCH(int, stage);
        RunConfig config = moeConfig(2, 2, 4, 2);
        config.runtime.zero_stage = stage;
        const std::string problem = stopAndResume(config);
        QVERIFY2(problem.empty(), problem.c_str());
    }

    // A rank that fails releases the ranks waiting for it in any group's collective (the hubs
    // are linked): the run ends at once, well inside runtime.comm_timeout_s, naming the failure.
    void aFailingRankReleasesItsGroups() {
        RunConfig config = moeConfig(2, 2, 4, 2);
        config.train.steps = 20;
        config.runtime.comm_timeout_s = 600;
        TrainingSession session(config);
        session.injectRankFailure(1, 3);
        session.start();
        QVERIFY(session.wait(std::chrono::seconds(60)));
        QCOMPARE(session.status(), RunStatus::Failed);
        QVERIFY2(session.summary().error.find("injected failure at step 4") != std::string::npos,
                 session.summary().error.c_str());
        QCOMPARE(session.liveThreads(), 0);
    }

    void badSettingsAreRefusedNamingTheField_data() {
        QTest::addColumn<int>("W");
        QTest::addColumn<int>("EP");
        QTest::addColumn<int>("stage");
        QTest::addColumn<QString>("field");
        QTest::newRow("EP 3 of W 4") << 4 << 3 << 0 << "runtime.expert_parallel";
        QTest::newRow("EP 8 of 4 experts") << 8 << 8 << 0 << "runtime.expert_parallel";
        QTest::newRow("EP 0") << 4 << 0 << 0 << "runtime.expert_parallel";
    }
    void badSettingsAreRefusedNamingTheField() {
        QFETCH(int, W);
        QFETCH(int, EP);
        QFETCH(int, stage);
        QFETCH(QString, field);
        RunConfig c = moeConfig(1, 1, W, EP);
        c.runtime.zero_stage = stage;
        bool named = false;
        for (const auto& issue : validateRunConfig(c)) named = named || QString::fromStdString(issue.path) == field;
        QVERIFY2(named, qPrintable(field));
        RunConfig dense = moeConfig(1, 1, 4, 2);
        dense.model.n_dense_layers = dense.model.n_layers;  // no MoE layer
        bool refused = false;
        for (const auto& issue : validateRunConfig(dense)) refused = refused || issue.path == "runtime.expert_parallel";
        QVERIFY(refused);
    }
};

QTEST_APPLESS_MAIN(TestExpertParallel)
#include "test_expert_parallel.moc"
