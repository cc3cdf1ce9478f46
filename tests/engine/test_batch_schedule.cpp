// Batch schedules (docs/design/noise_scale.md section 4): the ramp's global batch per step by hand, in
// multiples of m x W, its data cursor and learning-rate factor; the run's end in tokens and the
// learning rate counted in tokens; the adaptive policy's trigger and schedule by hand; runs that
// ramp or adapt log each step's batch and each change, and resume on the same schedule bit for
// bit; bad settings are refused naming the field.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include "conformance_setup.h"
#include "train/batch_adaptation.h"
#include "train/lr_schedule.h"
#include "train/resume_compatibility.h"
#include "train/trainer_state.h"
#include "trainbench/batch_schedule.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

RunConfig rampConfig() {
    RunConfig c = withSplit(conformanceConfig(), 2, 8, 2);  // B1 = 32, m x W = 4
    c.train.batch_policy = "ramp";
    c.train.batch_ramp_start = 8;
    c.train.batch_ramp_tokens = 64 * c.train.seq_len;  // 64 sequences of 16 tokens
    c.train.eval_every = 0;
    return c;
}

// m 2 x K 2 x W 2: B1 = 8 sequences, unit m x W = 4; growing as soon as an estimate exists.
RunConfig adaptiveConfig() {
    RunConfig c = withSplit(conformanceConfig(), 2, 2, 2);
    c.train.batch_policy = "adaptive";
    c.train.batch_adapt_threshold = 1e-9;
    c.train.batch_adapt_dwell_tokens = 1;
    c.train.batch_adapt_max_accumulation = 8;
    c.train.schedule = "constant";
    c.train.warmup_steps = 0;
    c.train.eval_every = 0;
    return c;
}

struct Logged {
    std::vector<double> loss, batch, lr, tokens;
    std::vector<std::string> changes;
};

Logged run(const RunConfig& config, SessionOptions options = {}) {
    TrainingSession session(config, options);
    auto inbox = session.bus().subscribe();
    session.start();
    if (!session.wait(std::chrono::minutes(2))) qFatal("run did not finish");
    if (session.summary().status != RunStatus::Completed) qFatal("run: %s", session.summary().error.c_str());
    Logged out;
    auto drained = inbox->drain();
    for (const auto& p : drained.points) {
        if (p.key == "train/loss") out.loss.push_back(p.value);
        if (p.key == "train/global_batch") out.batch.push_back(p.value);
        if (p.key == "train/lr") out.lr.push_back(p.value);
        if (p.key == "train/loss") out.tokens.push_back(double(p.tokens));
    }
    for (const auto& e : drained.events)
        if (e.kind == "batch_change") out.changes.push_back(e.message);
    return out;
}

}  // namespace

class TestBatchSchedule : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // B(t) = 8 + 24 min(1, t / 1024) at the token position t each step starts at, rounded down to
    // a multiple of 4: t = 0, 128, 256, 448, 704, 1088, 1600 give 8, 8 (11), 12 (14), 16 (18.5),
    // 24 (24.5), 32, 32.
    void theRampByHand() {
        const BatchSchedule schedule(rampConfig());
        QVERIFY(schedule.ramps());
        const std::vector<int64_t> batches{8, 8, 12, 16, 24, 32, 32}, firsts{0, 8, 16, 28, 44, 68, 100};
        for (size_t s = 0; s < batches.size(); ++s) {
            QCOMPARE(schedule.globalBatch(int64_t(s)), batches[s]);
            QCOMPARE(schedule.firstSample(int64_t(s)), firsts[s]);
            QCOMPARE(schedule.accumulation(int64_t(s), 2), batches[s] / 4);
            QCOMPARE(schedule.accumulation(int64_t(s), 1), batches[s] / 2);  // after a back-off to m = 1
        }
        QCOMPARE(schedule.tokensBefore(3), int64_t(28 * 16));  // the tokens axis: positions read before step 3
        QCOMPARE(schedule.lrFactor(0), 0.5);  // sqrt(8 / 32)
        RunConfig linear = rampConfig();
        linear.train.lr_batch_rule = "linear";
        QCOMPARE(BatchSchedule(linear).lrFactor(2), 12.0 / 32.0);
        linear.train.lr_batch_rule = "none";
        QCOMPARE(BatchSchedule(linear).lrFactor(2), 1.0);
        // Fixed: the configured batch, consecutive windows, no factor.
        const BatchSchedule fixed(withSplit(conformanceConfig(), 2, 8, 2));
        QVERIFY(!fixed.ramps());
        QCOMPARE(fixed.globalBatch(5), int64_t(32));
        QCOMPARE(fixed.firstSample(5), int64_t(160));
        QCOMPARE(fixed.lrFactor(5), 1.0);
    }

    // A run logs each step's batch as scheduled and one batch_change event per change; resumed
    // at step 3 it continues the same schedule and the same losses, bit for bit.
    void aRampingRunFollowsTheScheduleAndResumesOnIt() {
        RunConfig config = rampConfig();
        config.train.steps = 7;
        const Logged whole = run(config);
        QCOMPARE(whole.batch, (std::vector<double>{8, 8, 12, 16, 24, 32, 32}));
        QCOMPARE(whole.changes.size(), size_t(4));  // at steps 3, 4, 5 and 6
        QVERIFY2(whole.changes[0].find("8 -> 12") != std::string::npos, whole.changes[0].c_str());
        QTemporaryDir dir;
        SessionOptions first;
        first.checkpoint_dir = dir.path().toStdString();
        RunConfig three = config;
        three.train.steps = 3;
        run(three, first);
        std::vector<std::string> skipped;
        const auto checkpoint = checkpointToResume(first.checkpoint_dir, skipped);
        QVERIFY(checkpoint.has_value());
        SessionOptions resume;
        resume.resume_from = checkpoint->path;
        const Logged rest = run(config, resume);
        QCOMPARE(rest.batch, (std::vector<double>{16, 24, 32, 32}));
        QCOMPARE(rest.loss.size(), size_t(4));
        for (size_t i = 0; i < rest.loss.size(); ++i) QVERIFY(rest.loss[i] == whole.loss[i + 3]);  // bitwise
    }

    // A resume recomputes the schedule and its data cursor from the config: one that would
    // move them (another ramp, another rounding unit) is refused, naming the field.
    void aResumeThatWouldMoveTheScheduleIsRefused() {
        const RunConfig then = rampConfig();
        const std::string saved = runConfigToJson(then);
        requireResumable(then, saved, "ckpt");  // the same: fine
        RunConfig other = then;
        other.train.batch_ramp_start = 12;
        try {
            requireResumable(other, saved, "ckpt");
            QFAIL("a changed ramp was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.path()), QString("train.batch_ramp_start"));
        }
        RunConfig backed_off = then;  // the same B at m 1 x K 16: another unit for the ramp
        backed_off.train.micro_batch_size = 1;
        backed_off.train.gradient_accumulation_steps = 16;
        try {
            requireResumable(backed_off, saved, "ckpt");
            QFAIL("another rounding unit was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.path()), QString("train.micro_batch_size"));
        }
    }

    // The ramp of theRampByHand over 120 sequences (train.tokens 1,920): steps at 0, 8, 16, 28,
    // 44, 68, 100; the last one has 20 of its 32 left (5 micro-batches per rank at m 2, W 2),
    // or is dropped.
    void theRunEndsAtThePlannedTokens() {
        RunConfig c = rampConfig();
        c.train.tokens = 120 * 16;
        const BatchSchedule scaled(c);
        QCOMPARE(scaled.plannedSteps(), int64_t(7));
        QVERIFY(!scaled.finished(6));
        QVERIFY(scaled.finished(7));
        QCOMPARE(scaled.scheduledBatch(6), int64_t(32));
        QCOMPARE(scaled.globalBatch(6), int64_t(20));
        QCOMPARE(scaled.accumulation(6, 2), int64_t(5));
        QCOMPARE(scaled.plannedTokens(), int64_t(1920));
        QCOMPARE(scaled.lrFactor(6), 1.0);  // the batch the policy asked for, not the cut one
        c.train.incomplete_window = "drop";
        const BatchSchedule dropped(c);
        QCOMPARE(dropped.plannedSteps(), int64_t(6));
        QCOMPARE(dropped.plannedTokens(), int64_t(100 * 16));
        // Fixed, in tokens: 100 sequences of B 32 are three windows and 4 sequences (one
        // micro-batch per rank), like train.samples 100.
        RunConfig fixed = withSplit(conformanceConfig(), 2, 8, 2);
        fixed.train.tokens = 100 * 16;
        QCOMPARE(BatchSchedule(fixed).plannedSteps(), int64_t(4));
        QCOMPARE(BatchSchedule(fixed).accumulation(3, 2), int64_t(1));
        QCOMPARE(fixed.optimizerSteps(), int64_t(4));
        QCOMPARE(fixed.lastWindowMicroBatches(), int64_t(1));
    }

    // The learning rate counted in tokens, by hand: lr 1 -> 0.1 cosine, warm-up over 256 token
    // positions, the decay from 256 to 1,920.
    void theLearningRateCountsTokens() {
        TrainConfig t;
        t.lr = 1.0;
        t.min_lr = 0.1;
        t.schedule = "cosine";
        t.warmup_tokens = 256;
        auto at = [&](int64_t step, int64_t before, int64_t through) {
            return learningRate(t, TokenClock{step, before, through, 256, 1920});
        };
        QCOMPARE(at(0, 0, 128), 0.5);
        QCOMPARE(at(1, 128, 256), 1.0);
        QCOMPARE(at(2, 256, 448), 1.0);  // the decay's first point
        const double pi = 3.14159265358979323846;
        QVERIFY(std::abs(at(4, 704, 1088) - (0.1 + 0.45 * (1 + std::cos(pi * 448.0 / 1664.0)))) < 1e-15);
        QVERIFY(std::abs(at(6, 1920, 1920) - 0.1) < 1e-15);
        // Warm-up in steps (warmup_tokens 0) and a fixed batch of 64 positions a step: the
        // token form gives the step form at every step.
        t.warmup_tokens = 0;
        t.warmup_steps = 3;
        for (int64_t s = 0; s < 20; ++s) {
            const double in_tokens = learningRate(t, TokenClock{s, 64 * s, 64 * (s + 1), 64 * 3, 64 * 20});
            QVERIFY(std::abs(in_tokens - learningRate(t, s, 20)) < 1e-15);
        }
    }

    // The trigger: above threshold x B for the dwell (reset by a step at or below it, or no
    // estimate), then the largest integer factor up to batch_adapt_factor within the largest K.
    void theAdaptiveTriggerByHand() {
        TrainConfig t;
        t.batch_adapt_threshold = 2.0;
        t.batch_adapt_dwell_tokens = 100;
        t.batch_adapt_factor = 4;
        t.batch_adapt_max_accumulation = 8;
        BatchAdaptation adapt(t, /*unit=*/4);  // largest batch 32
        QVERIFY(!adapt.observe(8, 50, 17.0));
        QVERIFY(!adapt.observe(8, 50, 16.0));  // not above 2 x 8: the dwell starts again
        QCOMPARE(adapt.dwellTokens(), int64_t(0));
        QVERIFY(!adapt.observe(8, 50, 17.0));
        QVERIFY(!adapt.observe(8, 40, std::nan("")));  // no estimate: again
        QVERIFY(!adapt.observe(8, 60, 17.0));
        const auto first = adapt.observe(8, 60, 17.0);
        QVERIFY(first.has_value());
        QCOMPARE(first->from_batch, int64_t(8));
        QCOMPARE(first->to_batch, int64_t(32));  // x 4 fits
        QCOMPARE(first->dwell_tokens, int64_t(120));
        QCOMPARE(adapt.dwellTokens(), int64_t(0));
        QVERIFY2(adapt.explain(*first).find("17 sequences > 2 x 8 for 120 tokens") != std::string::npos,
                 adapt.explain(*first).c_str());
        // From 12 (K 3), x 4 and x 3 pass K 8: x 2 to 24. At 32 nothing grows.
        const auto capped = BatchAdaptation(t, 4).observe(12, 100, 100.0);
        QVERIFY(capped.has_value());
        QCOMPARE(capped->to_batch, int64_t(24));
        QVERIFY(!BatchAdaptation(t, 4).observe(32, 1000, 1000.0));
    }

    // Growths by hand: B1 8 over steps 10 (80 sequences). Grown to 16 from step 3: steps at 0, 8,
    // 16, 24, 40, 56, 72 (8 left: a cut last window); then to 32 from step 5: 0, 8, 16, 24, 40, 56
    // (24 left). The changes round-trip through restore.
    void theAdaptiveScheduleByHand() {
        RunConfig c = adaptiveConfig();
        c.train.steps = 10;
        BatchSchedule schedule(c);
        QVERIFY(schedule.adapts());
        QCOMPARE(schedule.plannedSteps(), int64_t(10));
        QCOMPARE(schedule.plannedTokens(), int64_t(80 * 16));
        QCOMPARE(schedule.accumulation(9, 2), int64_t(2));
        schedule.grow(3, 16);
        QCOMPARE(schedule.plannedSteps(), int64_t(7));
        QCOMPARE(schedule.firstSample(6), int64_t(72));
        QCOMPARE(schedule.globalBatch(6), int64_t(8));
        QCOMPARE(schedule.globalBatch(2), int64_t(8));
        QCOMPARE(schedule.accumulation(4, 2), int64_t(4));
        QCOMPARE(schedule.lrFactor(3), std::sqrt(2.0));
        QCOMPARE(schedule.lrFactor(2), 1.0);
        schedule.grow(5, 32);
        QCOMPARE(schedule.plannedSteps(), int64_t(6));
        QCOMPARE(schedule.firstSample(5), int64_t(56));
        QCOMPARE(schedule.globalBatch(5), int64_t(24));
        QCOMPARE(schedule.plannedTokens(), int64_t(80 * 16));
        bool refused = false;
        try {
            schedule.grow(4, 64);
        } catch (const std::logic_error&) {
            refused = true;
        }
        QVERIFY(refused);
        BatchSchedule resumed(c);
        resumed.restore(schedule.changes());
        for (int64_t s = 0; s < 6; ++s) {
            QCOMPARE(resumed.globalBatch(s), schedule.globalBatch(s));
            QCOMPARE(resumed.firstSample(s), schedule.firstSample(s));
        }
    }

    // An adaptive run at W 2 (every rank decides alike, or the collectives would not pair up):
    // 8 -> 16 -> 32 (K 8, the largest), each change an event naming the estimate, the rate x
    // sqrt(B / 8) once per change, 304 sequences read in all (8 + 16 + 32 x 8 + 24: the last window
    // cut). Extended from its checkpoint after 3 steps, it continues the same schedule bit for bit.
    void anAdaptiveRunGrowsAndResumesOnItsSchedule() {
        RunConfig config = adaptiveConfig();
        config.train.tokens = 304 * 16;
        const Logged whole = run(config);
        QCOMPARE(whole.batch, (std::vector<double>{8, 16, 32, 32, 32, 32, 32, 32, 32, 32, 24}));
        QCOMPARE(whole.changes.size(), size_t(2));
        QVERIFY2(whole.changes[0].find("8 -> 16 sequences (gradient_accumulation_steps 2 -> 4, adaptive: critical batch") !=
                     std::string::npos,
                 whole.changes[0].c_str());
        QVERIFY2(whole.changes[1].find("16 -> 32") != std::string::npos, whole.changes[1].c_str());
        // The last window is cut, its rate is the one of the batch the policy asked for (32).
        QCOMPARE(whole.lr.size(), whole.batch.size());
        for (size_t s = 0; s < whole.lr.size(); ++s)
            QVERIFY(std::abs(whole.lr[s] - config.train.lr * std::sqrt(std::max(whole.batch[s], s > 1 ? 32.0 : 0.0) / 8.0)) <
                    1e-15);
        QCOMPARE(whole.tokens.back(), 304.0 * 16);  // every position of a markov sequence is a target
        QTemporaryDir dir;
        SessionOptions first;
        first.checkpoint_dir = dir.path().toStdString();
        RunConfig three = config;
        three.train.tokens = 56 * 16;  // the first three steps
        const Logged head = run(three, first);
        QCOMPARE(head.batch, (std::vector<double>{8, 16, 32}));
        std::vector<std::string> skipped;
        const auto checkpoint = checkpointToResume(first.checkpoint_dir, skipped);
        QVERIFY(checkpoint.has_value());
        SessionOptions resume;
        resume.resume_from = checkpoint->path;
        const Logged rest = run(config, resume);
        QCOMPARE(rest.batch, (std::vector<double>(whole.batch.begin() + 3, whole.batch.end())));
        QCOMPARE(rest.loss.size(), whole.loss.size() - 3);
        for (size_t i = 0; i < rest.loss.size(); ++i) QVERIFY(rest.loss[i] == whole.loss[i + 3]);  // bitwise
    }

    // A trainer.json whose batch schedule is damaged is refused naming the file.
    void aDamagedBatchScheduleIsRefused() {
        const std::string head = R"({"step": 3, "tokens": 10, "last_loss": 1.0, "config": {}, "batch_schedule": )";
        const TrainerState ok = parseTrainerJson(head + R"({"changes": [[1, 16], [2, 32]], "dwell_tokens": 5}})", "t.json");
        QCOMPARE(ok.batch_changes.size(), size_t(2));
        QCOMPARE(ok.batch_changes[1].second, int64_t(32));
        QCOMPARE(ok.batch_dwell_tokens, int64_t(5));
        for (const char* bad : {R"({"changes": [[2, 16], [1, 32]], "dwell_tokens": 0}})", R"({"changes": [[1]], "dwell_tokens": 0}})",
                                R"({"changes": [], "dwell_tokens": -1}})", R"([])"}) {
            try {
                parseTrainerJson(head + bad, "t.json");
                QFAIL(bad);
            } catch (const ConfigError& e) {
                QVERIFY2(std::string(e.what()).find("t.json") != std::string::npos, e.what());
            }
        }
    }

    void badAdaptiveSettingsAreRefusedNamingTheField_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("setting");
        QTest::newRow("no largest K") << "train.batch_adapt_max_accumulation" << "max 2";
        QTest::newRow("no dwell") << "train.batch_adapt_dwell_tokens" << "dwell 0";
        QTest::newRow("factor 1") << "train.batch_adapt_factor" << "factor 1";
        QTest::newRow("threshold 0") << "train.batch_adapt_threshold" << "threshold 0";
        QTest::newRow("no noise scale") << "train.noise_scale" << "noise off";
        QTest::newRow("one micro-batch") << "train.gradient_accumulation_steps" << "K 1 W 1";
        QTest::newRow("fixed with adaptive fields") << "train.batch_policy" << "fixed";
        QTest::newRow("tokens and samples") << "train.tokens" << "both";
        QTest::newRow("tokens off the unit") << "train.tokens" << "tokens 100";
    }
    void badAdaptiveSettingsAreRefusedNamingTheField() {
        QFETCH(QString, field);
        QFETCH(QString, setting);
        RunConfig c = adaptiveConfig();
        QVERIFY(validateRunConfig(c).empty());
        if (setting == "max 2") c.train.batch_adapt_max_accumulation = 2;
        if (setting == "dwell 0") c.train.batch_adapt_dwell_tokens = 0;
        if (setting == "factor 1") c.train.batch_adapt_factor = 1;
        if (setting == "threshold 0") c.train.batch_adapt_threshold = 0;
        if (setting == "noise off") c.train.noise_scale = false;
        if (setting == "K 1 W 1") c = withSplit(c, 2, 1, 1);
        if (setting == "fixed") c.train.batch_policy = "fixed";
        if (setting == "both") c.train.tokens = 64 * 16, c.train.samples = 64;
        if (setting == "tokens 100") c.train.tokens = 100;
        bool named = false;
        std::string all;
        for (const auto& issue : validateRunConfig(c)) {
            named = named || QString::fromStdString(issue.path) == field;
            all += issue.path + ": " + issue.message + "\n";
        }
        QVERIFY2(named, all.c_str());
    }

    void badRampSettingsAreRefusedNamingTheField_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<int>("start");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<QString>("policy");
        QTest::addColumn<int>("samples");
        QTest::newRow("start below m x W") << "train.batch_ramp_start" << 2 << 1024 << "ramp" << 0;
        QTest::newRow("start above B") << "train.batch_ramp_start" << 64 << 1024 << "ramp" << 0;
        QTest::newRow("no tokens") << "train.batch_ramp_tokens" << 8 << 0 << "ramp" << 0;
        QTest::newRow("fixed with a ramp") << "train.batch_policy" << 8 << 1024 << "fixed" << 0;
    }
    void badRampSettingsAreRefusedNamingTheField() {
        QFETCH(QString, field);
        QFETCH(int, start);
        QFETCH(int, tokens);
        QFETCH(QString, policy);
        QFETCH(int, samples);
        RunConfig c = rampConfig();
        c.train.batch_ramp_start = start;
        c.train.batch_ramp_tokens = tokens;
        c.train.batch_policy = policy.toStdString();
        c.train.samples = samples;
        bool named = false;
        for (const auto& issue : validateRunConfig(c)) named = named || QString::fromStdString(issue.path) == field;
        QVERIFY2(named, qPrintable(field));
    }
};

QTEST_APPLESS_MAIN(TestBatchSchedule)
#include "test_batch_schedule.moc"
