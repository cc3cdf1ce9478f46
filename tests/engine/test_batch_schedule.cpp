// Batch schedules (NOISE_SCALE.md section 4): the ramp's global batch per step by hand, in
// multiples of m x W, its data cursor and learning-rate factor; a run that ramps logs each
// step's batch and each change, and resumes on the same schedule bit for bit; bad settings
// are refused naming the field.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include "conformance_setup.h"
#include "train/resume_compatibility.h"
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

struct Logged {
    std::vector<double> loss, batch;
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

    void badRampSettingsAreRefusedNamingTheField_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<int>("start");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<QString>("policy");
        QTest::addColumn<int>("samples");
        QTest::newRow("start below m x W") << "train.batch_ramp_start" << 2 << 1024 << "ramp" << 0;
        QTest::newRow("start above B") << "train.batch_ramp_start" << 64 << 1024 << "ramp" << 0;
        QTest::newRow("no tokens") << "train.batch_ramp_tokens" << 8 << 0 << "ramp" << 0;
        QTest::newRow("with samples") << "train.samples" << 8 << 1024 << "ramp" << 64;
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
