// Multi-token prediction (model.n_mtp_depth, docs/design/model.md section 8): one micro-batch's
// depth losses against a hand computation, the window's objective against the formula in fp64,
// every conformance split, layout and schedule against plain data parallelism, the weight's
// switch, resume, and the module's parameter count against the published V3 figure.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <cmath>

#include "conformance_setup.h"
#include "generate/generation.h"
#include "model/mtp_module.h"
#include "model/transformer.h"
#include "rank_threads.h"
#include "stop_and_resume.h"
#include "train_and_collect.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"
#include "trainbench/param_count.h"

using namespace trainbench;

namespace {

// Every step's main loss, gradient norm and depth losses of `a` within `tolerance` of `b`.
void compareSeries(const Series& a, const Series& b, double tolerance, const QString& what) {
    QVERIFY2(a.loss.size() == b.loss.size() && !b.loss.empty(), qPrintable(what + ": steps"));
    QVERIFY2(a.mtp_loss.size() == b.mtp_loss.size() && !b.mtp_loss.empty(), qPrintable(what + ": depths"));
    for (size_t i = 0; i < b.loss.size(); ++i) {
        const QString at = what + QString(", step %1").arg(i + 1);
        QVERIFY2(relativeDifference(a.loss[i], b.loss[i]) < tolerance,
                 qPrintable(at + QString(": loss %1 vs %2").arg(a.loss[i], 0, 'g', 12).arg(b.loss[i], 0, 'g', 12)));
        QVERIFY2(relativeDifference(a.grad_norm[i], b.grad_norm[i]) < tolerance, qPrintable(at + ": grad norm"));
        for (size_t k = 0; k < b.mtp_loss.size(); ++k) {
            QVERIFY2(a.mtp_loss[k].size() == b.mtp_loss[k].size(), qPrintable(at + ": depth points"));
            QVERIFY2(relativeDifference(a.mtp_loss[k][i], b.mtp_loss[k][i]) < tolerance,
                     qPrintable(at + QString(": depth %1 loss %2 vs %3").arg(k + 1).arg(a.mtp_loss[k][i], 0, 'g', 12).arg(b.mtp_loss[k][i], 0, 'g', 12)));
        }
    }
}

// The conformance run with D modules (its balance loss on, so the modules' MoE counts too).
RunConfig withModules(RunConfig c, int64_t depth) {
    c.model.n_mtp_depth = depth;
    c.model.seq_aux_loss_alpha = 0.01;
    c.train.mtp_loss_weight = 0.3;
    return c;
}

torch::Tensor rmsNormed(const torch::Tensor& x, const torch::Tensor& weight) {
    return x * torch::rsqrt(x.square().mean(-1, true) + 1e-6) * weight;
}

}  // namespace

class TestMtp : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Two depths of a two-layer model in fp64: each depth's loss sum and count against the
    // module's parts put together by hand (the shifts, enorm/hnorm, eh_proj with the embedding
    // first, the module's norm, the shared head, a log-softmax read per position), with a
    // prompt's uncounted targets, a padded row's tail and the positions whose target lies past
    // the sequence's end; the main loss equals a model without modules bit for bit.
    void oneMicroBatchAgainstAHandComputation() {
        ModelConfig c = tinyTestModel(32, 32);
        c.n_mtp_depth = 2;
        c.seq_aux_loss_alpha = 0.01;
        Transformer model(c);
        initializeWeights(model, 5);
        model->to(torch::kFloat64);
        torch::manual_seed(3);
        const int64_t B = 2, T = 9;
        auto tokens = torch::randint(0, c.vocab_size, {B, T}, torch::kInt64);
        auto targets = torch::randint(0, c.vocab_size, {B, T}, torch::kInt64);
        for (int64_t i = 0; i < 3; ++i) targets[0][i] = kIgnoreIndex;      // a prompt
        for (int64_t i = 6; i < T; ++i) targets[1][i] = kIgnoreIndex;      // padding
        torch::NoGradGuard no_grad;
        const LossParts parts = model->loss(tokens, targets);
        QCOMPARE(parts.mtp_loss_sums.size(0), int64_t(2));

        auto [h, embedded] = model->trunk(tokens);
        auto named = model->named_parameters();
        RotaryTable rotary(c);
        const torch::Tensor head = named["head.weight"];
        torch::Tensor previous = h;
        for (int64_t k = 1; k <= 2; ++k) {
            const std::string prefix = "mtp." + std::to_string(k - 1) + ".";
            const int64_t S = T - k;
            const torch::Tensor eh = named[prefix + "eh_proj.weight"];  // [d, 2d]: the embedding's columns first
            const torch::Tensor joined =
                rmsNormed(embedded.narrow(1, k, S), named[prefix + "enorm.weight"]).matmul(eh.narrow(1, 0, c.dim).t()) +
                rmsNormed(previous.narrow(1, 0, S), named[prefix + "hnorm.weight"]).matmul(eh.narrow(1, c.dim, c.dim).t());
            torch::Tensor aux;
            const torch::Tensor out = model->mtpModule(k - 1).forward(joined, rotary, aux);
            const torch::Tensor log_p = torch::log_softmax(rmsNormed(out, named[prefix + "norm.weight"]).matmul(head.t()), -1);
            double sum = 0;
            int64_t count = 0;
            for (int64_t b = 0; b < B; ++b)
                for (int64_t i = 0; i + k < T; ++i) {
                    const int64_t target = targets[b][i + k].item<int64_t>();  // the token k + 1 after token i
                    if (target == kIgnoreIndex) continue;
                    sum -= log_p[b][i][target].item<double>();
                    ++count;
                }
            // Hand counts: row 0 counts targets 3..8, row 1 targets 0..5; depth k starts at k.
            const int64_t expected = (T - std::max<int64_t>(3, k)) + (6 - k);
            QCOMPARE(count, expected);
            QCOMPARE(parts.mtp_token_counts[k - 1].item<int64_t>(), expected);
            QCOMPARE(mtpTargetCounts(targets, 2)[k].item<int64_t>(), expected);
            const double got = parts.mtp_loss_sums[k - 1].item<double>();
            QVERIFY2(std::fabs(got - sum) < 1e-10 * std::fabs(sum), qPrintable(QString("depth %1: %2 vs %3").arg(k).arg(got, 0, 'g', 17).arg(sum, 0, 'g', 17)));
            previous = out;
        }

        // The main model's loss does not see the modules.
        ModelConfig plain = c;
        plain.n_mtp_depth = 0;
        Transformer without(plain);
        without->to(torch::kFloat64);
        auto own = without->named_parameters();
        for (const auto& item : named)
            if (own.contains(item.key())) own[item.key()].copy_(item.value());
        for (const auto& item : model->named_buffers()) {
            auto buffers = without->named_buffers();
            if (buffers.contains(item.key())) buffers[item.key()].copy_(item.value());
        }
        const LossParts reference = without->loss(tokens, targets);
        QVERIFY(torch::equal(reference.token_loss_sum, parts.token_loss_sum));
        QVERIFY(torch::equal(reference.token_count, parts.token_count));
    }

    // A window of micro-batches with different target counts per depth (padded ragged rows, K =
    // 4, two ranks): the reduced gradient divided by N equals, to 1e-10 in fp64, the gradient of
    // L_main + aux + lambda / D x sum_k S_k / N_k computed here from the same micro-batches with
    // the counts taken by hand; and the logged depth losses are S_k / N_k.
    void theWindowsObjectiveIsTheTokenWeightedMeanOfEachDepth() {
        QTemporaryDir dir;
        RunConfig c = withSplit(withModules(raggedTextConfig(writeRaggedCorpus(dir)), 2), 1, 4, 2);
        c.train.mtp_loss_weight = 0.5;
        RankThreadOptions options;
        options.fp64 = true;
        std::mutex mutex;
        std::vector<std::vector<MicroBatch>> seen(2);  // per rank, in order
        options.edit_micro_batch = [&](int rank, int64_t, int64_t, MicroBatch& batch) {
            std::lock_guard lock(mutex);
            seen[rank].push_back(MicroBatch{batch.tokens.clone(), batch.targets.clone()});
        };
        std::vector<std::pair<std::string, torch::Tensor>> initial;
        std::vector<std::pair<std::string, torch::Tensor>> buffers;
        std::vector<torch::Tensor> gradients;
        WindowResult window;
        onRankTrainers(c, options, [&](int r, RankTrainer& trainer) {
            if (r == 0) {
                for (const auto& [name, t] : stateDict(trainer.model())) initial.emplace_back(name, t.detach().clone());
            }
            WindowResult w;
            trainer.accumulateWindow(0, w);
            if (r != 0) return;
            window = w;
            for (auto& p : trainer.model()->parameters()) gradients.push_back(p.grad() / double(w.tokens));
        });
        // The counts by hand.
        int64_t N = 0, N1 = 0, N2 = 0;
        for (const auto& rank : seen)
            for (const auto& batch : rank) {
                const auto t = batch.targets;
                for (int64_t b = 0; b < t.size(0); ++b)
                    for (int64_t i = 0; i < t.size(1); ++i) {
                        if (t[b][i].item<int64_t>() == kIgnoreIndex) continue;
                        ++N;
                        if (i >= 1) ++N1;
                        if (i >= 2) ++N2;
                    }
            }
        QCOMPARE(window.tokens, N);
        QCOMPARE(window.mtp_tokens, (std::vector<int64_t>{N1, N2}));
        QVERIFY(N1 < N && N2 < N1);
        Transformer reference(c.model);
        reference->to(torch::kFloat64);
        {
            torch::NoGradGuard no_grad;
            auto own = stateDict(reference);
            for (size_t i = 0; i < own.size(); ++i) own[i].second.copy_(initial[i].second);
        }
        reference->train();
        double s1 = 0, s2 = 0;
        for (const auto& rank : seen)
            for (const auto& batch : rank) {
                LossParts parts = reference->loss(batch.tokens, batch.targets);
                torch::Tensor objective = (parts.token_loss_sum + parts.aux_loss_sum) / double(N) +
                                          0.5 / 2 * (parts.mtp_loss_sums[0] / double(N1) + parts.mtp_loss_sums[1] / double(N2));
                objective.backward();
                s1 += parts.mtp_loss_sums[0].item<double>();
                s2 += parts.mtp_loss_sums[1].item<double>();
            }
        QVERIFY(std::fabs(window.mtp_loss_sums[0] - s1) < 1e-10 * s1);
        QVERIFY(std::fabs(window.mtp_loss_sums[1] - s2) < 1e-10 * s2);
        QCOMPARE(window.mtp_weight, 0.5);
        const auto expected = reference->parameters();
        QCOMPARE(gradients.size(), expected.size());
        double scale = 0, worst = 0;
        for (const auto& p : expected) scale = std::max(scale, p.grad().abs().max().item<double>());
        for (size_t i = 0; i < expected.size(); ++i)
            worst = std::max(worst, (gradients[i] - expected[i].grad()).abs().max().item<double>() / scale);
        QVERIFY2(worst < 1e-10, qPrintable(QString("relative gradient error %1").arg(worst)));
    }

    // The conformance splits of B = 8 log (8,1,1)'s main loss, gradient norm and depth losses at
    // every step (fp32, 1e-5), with one and with two modules.
    void everySplitLogsTheFullBatchsNumbers() {
        for (int64_t depth : {1, 2}) {
            const RunConfig base = withModules(conformanceConfig(), depth);
            const Series reference = trainAndCollect(withSplit(base, 8, 1, 1));
            QCOMPARE(reference.mtp_loss[depth - 1].size(), size_t(base.train.steps));
            for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{2, 4, 1}, {2, 2, 2}, {1, 4, 2}})
                compareSeries(trainAndCollect(withSplit(base, m, K, W)), reference, 1e-5,
                              QString("D %1 (%2,%3,%4)").arg(depth).arg(m).arg(K).arg(W));
        }
    }

    // Ragged padded rows (ranks and micro-batches count different targets at every depth) and an
    // incomplete last window (20 samples, K = 4 on two ranks: windows of 8, 8 and 4).
    void raggedRowsAndTheIncompleteLastWindow() {
        QTemporaryDir dir;
        RunConfig base = withModules(raggedTextConfig(writeRaggedCorpus(dir)), 1);
        base.train.samples = 20;
        const Series reference = trainAndCollect(withSplit(base, 4, 1, 1));
        QCOMPARE(reference.loss.size(), size_t(5));
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{1, 4, 1}, {1, 2, 2}})
            compareSeries(trainAndCollect(withSplit(base, m, K, W)), reference, 1e-5,
                          QString("ragged (%1,%2,%3)").arg(m).arg(K).arg(W));
        base.train.samples = 20;
        const Series incomplete = trainAndCollect(withSplit(base, 2, 2, 2));
        QCOMPARE(incomplete.loss.size(), size_t(3));
    }

    // ZeRO 1-3, expert parallelism, recomputation and optimizer offload log plain data
    // parallelism's numbers at every step (1e-5).
    void everyLayoutLogsDataParallelNumbers() {
        const RunConfig base = withSplit(withModules(conformanceConfig(), 1), 2, 2, 2);
        const Series reference = trainAndCollect(base);
        for (int64_t stage : {1, 2, 3}) {
            RunConfig c = base;
            c.runtime.zero_stage = stage;
            compareSeries(trainAndCollect(c), reference, 1e-5, QString("stage %1").arg(stage));
        }
        RunConfig ep = base;
        ep.runtime.expert_parallel = 2;
        compareSeries(trainAndCollect(ep), reference, 1e-5, "EP 2");
        for (const char* mode : {"full", "feedforward"}) {
            RunConfig c = base;
            c.runtime.activation_checkpointing = mode;
            compareSeries(trainAndCollect(c), reference, 1e-5, QString("recomputation ") + mode);
        }
        RunConfig offload = base;
        offload.runtime.zero_stage = 3;
        offload.runtime.offload = "all";
        compareSeries(trainAndCollect(offload), reference, 1e-5, "stage 3 offload all");
    }

    // lambda = 0.3 until the switch and 0.1 from the window that starts at 2 steps' tokens; with
    // lambda 0 and no balance loss the main model trains exactly as without modules.
    void theWeightSwitchesAndZeroLeavesTheMainModelAlone() {
        RunConfig c = withModules(conformanceConfig(), 1);
        c.train.mtp_loss_weight_switch_tokens = 2 * c.globalBatch() * c.train.seq_len;
        const Series switched = trainAndCollect(c);
        QCOMPARE(switched.mtp_weight, (std::vector<double>{0.3, 0.3, 0.1, 0.1}));

        RunConfig zero = withModules(conformanceConfig(), 1);
        zero.model.seq_aux_loss_alpha = 0;
        zero.train.mtp_loss_weight = 0;
        RunConfig plain = zero;
        plain.model.n_mtp_depth = 0;
        const Series with = trainAndCollect(zero);
        const Series without = trainAndCollect(plain);
        QVERIFY(with.loss == without.loss);
        QVERIFY(with.grad_norm == without.grad_norm);
        // ... while lambda > 0 changes it.
        QVERIFY(trainAndCollect(withModules(conformanceConfig(), 1)).loss != without.loss);
    }

    // A stop and a resume train on to the uninterrupted run's losses, weights and moments bit for
    // bit, the module's included; a checkpoint without a module does not resume with one.
    void aRunWithModulesResumesAndAPlainCheckpointIsRefused() {
        const RunConfig c = withSplit(withModules(conformanceConfig(), 1), 2, 2, 1);
        const std::string problem = stopAndResume(c);
        QVERIFY2(problem.empty(), problem.c_str());

        QTemporaryDir dir;
        RunConfig plain = c;
        plain.model.n_mtp_depth = 0;
        plain.train.steps = 2;
        SessionOptions options;
        options.checkpoint_dir = dir.path().toStdString();
        std::vector<double> losses;
        QVERIFY(trainToEnd(plain, options, "the plain run", losses).empty());
        std::vector<std::string> skipped;
        const auto checkpoint = checkpointToResume(options.checkpoint_dir, skipped);
        QVERIFY(checkpoint.has_value());
        RunConfig with = c;
        with.train.steps = 4;
        SessionOptions resume;
        resume.resume_from = checkpoint->path;
        try {
            TrainingSession session(with, resume);
            QFAIL("a checkpoint without a module resumed with one");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.path()), QString("model.n_mtp_depth"));
        }
    }

    // DeepSeek-V3 with its one module: the module's unique parameters by hand (a MoE block of
    // 256 + 1 experts, eh_proj 2d x d, three norms) and near the published 11.5 B.
    void theV3ModuleHasThePublishedParameters() {
        ModelConfig v3 = loadRunConfigFile(TRAINBENCH_SOURCE_DIR "/configs/deepseek/config_671B.json").model;
        const ParamCount main = countParameters(v3);
        v3.n_mtp_depth = 1;
        const ParamCount with = countParameters(v3);
        const int64_t d = 7168;
        const int64_t attention = d * 1536 + 1536 + 1536 * 128 * 192 + d * (512 + 64) + 512 + 512 * 128 * (128 + 128) +
                                  128 * 128 * d;
        const int64_t block = attention + 2 * d + (256 * d + 256) + (256 + 1) * 3 * d * 2048;
        const int64_t module = block + 2 * d * d + 3 * d;
        QCOMPARE(with.mtp, module);
        QCOMPARE(with.total, main.total + module);
        QVERIFY2(std::fabs(double(module) / 11.5e9 - 1) < 0.01, qPrintable(QString::number(double(module))));
        QCOMPARE(with.mtp_activated, attention + 2 * d + (256 * d + 256) + (8 + 1) * 3 * d * 2048 + 2 * d * d + 3 * d);
        // The module's names: a block's, plus its four, under mtp.0.
        ModelConfig tiny = tinyTestModel(32, 32);
        tiny.n_mtp_depth = 1;
        const auto names = stateDict(Transformer(tiny));
        QCOMPARE(int64_t(names.size()), countParameters(tiny).state_dict_tensors);
        int64_t in_module = 0;
        for (const auto& [name, t] : names) in_module += name.rfind("mtp.0.", 0) == 0;
        tiny.n_mtp_depth = 0;
        QCOMPARE(in_module, int64_t(names.size()) - countParameters(tiny).state_dict_tensors);
        QCOMPARE(QString::fromStdString(mtpLayerName("mtp.0.attn.wo.weight", 61)), QString("layers.61.attn.wo.weight"));
        QCOMPARE(QString::fromStdString(mtpLayerName("layers.3.attn.wo.weight", 61)), QString("layers.3.attn.wo.weight"));
    }

    // Self-speculative decoding on trained weights (a Markov language whose token after next is
    // partly predictable): plain greedy decoding's tokens and log-probabilities, with drafts
    // accepted, so fewer main-model forwards than tokens; more accepted after training than at
    // initialisation. Refused without a module or with a temperature.
    void speculativeDecodingKeepsTheGreedyTokens() {
        RunConfig c = withModules(conformanceConfig(), 1);
        c.data.concentration = 0.05;
        c.train.micro_batch_size = 8;
        c.train.lr = 1e-2;
        c.train.min_lr = 1e-3;
        c.train.grad_clip = 1.0;
        const std::vector<std::vector<int64_t>> prompts{{1, 2, 3}, {5}, {7, 7, 9, 11, 4}};
        std::vector<Generation> plain, speculative;
        GenerationTiming untrained, trained;
        std::string refusal_depth, refusal_temperature;
        onRankTrainers(c, {}, [&](int, RankTrainer& trainer) {
            Transformer& model = trainer.model();
            GenerationOptions o;
            o.sampling.temperature = 0;
            o.max_new_tokens = 40;
            o.speculative_mtp = true;
            generate(model, prompts, o, &untrained);
            trainSteps(trainer, 80);
            speculative = generate(model, prompts, o, &trained);
            o.speculative_mtp = false;
            plain = generate(model, prompts, o);
            o.speculative_mtp = true;
            o.sampling.temperature = 0.7;
            try {
                generate(model, prompts, o);
            } catch (const std::invalid_argument& e) {
                refusal_temperature = e.what();
            }
        });
        for (size_t i = 0; i < prompts.size(); ++i) {
            QCOMPARE(speculative[i].tokens, plain[i].tokens);
            QCOMPARE(speculative[i].tokens.size(), size_t(40));
            for (size_t t = 0; t < plain[i].logprobs.size(); ++t)
                QVERIFY(std::fabs(speculative[i].logprobs[t] - plain[i].logprobs[t]) < 1e-4);
        }
        QVERIFY(trained.drafted > 0);
        const double rate = double(trained.accepted) / double(trained.drafted);
        const double rate_at_init = double(untrained.accepted) / double(untrained.drafted);
        qInfo("acceptance: %.3f at initialisation, %.3f after 80 steps; %lld forwards for %lld tokens", rate_at_init,
              rate, (long long)trained.forwards, (long long)trained.decode_tokens);
        QVERIFY2(rate > rate_at_init && rate > 0.3, qPrintable(QString("acceptance %1 (at init %2)").arg(rate).arg(rate_at_init)));
        QVERIFY(trained.forwards < trained.decode_tokens);
        QCOMPARE(trained.decode_tokens, int64_t(3 * 39));
        QVERIFY(refusal_temperature.find("temperature") != std::string::npos);

        RunConfig plain_config = conformanceConfig();
        Transformer without(plain_config.model);
        GenerationOptions o;
        o.sampling.temperature = 0;
        o.max_new_tokens = 8;
        o.speculative_mtp = true;
        try {
            generate(without, prompts, o);
            QFAIL("a model without a module drafted");
        } catch (const std::invalid_argument& e) {
            QVERIFY(std::string(e.what()).find("model.n_mtp_depth") != std::string::npos);
        }
    }

    // The planner's state with a module: its parameters' fp32 weights and gradients and two
    // moments beside the model without, at stage 0 and, sharded over two ranks, at stage 1; one
    // collective more a step (the window's counts).
    void thePlannerCountsTheModulesState() {
        RunConfig c = withSplit(withModules(conformanceConfig(), 1), 2, 2, 2);
        RunConfig plain = c;
        plain.model.n_mtp_depth = 0;
        const int64_t module = countParameters(c.model).mtp;
        QVERIFY(module > 0);
        const MemoryPlan with = planMemory(c), without = planMemory(plain);
        QCOMPARE(with.weight_bytes - without.weight_bytes, 4 * module);
        QCOMPARE(with.gradient_bytes - without.gradient_bytes, 4 * module);
        QCOMPARE(with.optimizer_bytes - without.optimizer_bytes, 8 * module);
        QVERIFY(with.activation_bytes > without.activation_bytes);
        QCOMPARE(with.collectives_per_step, without.collectives_per_step + 1);
        c.runtime.zero_stage = 1;
        plain.runtime.zero_stage = 1;
        const MemoryPlan sharded = planMemory(c), sharded_without = planMemory(plain);
        QVERIFY(std::llabs(sharded.optimizer_bytes - sharded_without.optimizer_bytes - 8 * module / 2) <= 8);
    }

    // The config's refusals name the field.
    void badSettingsAreRefusedNamingTheField() {
        auto firstField = [](const RunConfig& c) {
            const auto issues = validateRunConfig(c);
            return issues.empty() ? QString() : QString::fromStdString(issues[0].path);
        };
        RunConfig c = conformanceConfig();
        QCOMPARE(firstField(c), QString());
        c.model.n_mtp_depth = c.train.seq_len;
        QCOMPARE(firstField(c), QString("model.n_mtp_depth"));
        c = conformanceConfig();
        c.train.mtp_loss_weight = -0.1;
        QCOMPARE(firstField(c), QString("train.mtp_loss_weight"));
        c = conformanceConfig();
        c.model.n_mtp_depth = -1;
        QCOMPARE(firstField(c), QString("model.n_mtp_depth"));
    }
};

QTEST_GUILESS_MAIN(TestMtp)
#include "test_mtp.moc"
