// Training suite: a tiny DeepSeek-style model learns, metrics flow, and stop joins the threads.
#include <QtTest/QtTest>

#include <cmath>

#include "tiny_model.h"
#include "trainbench/config_io.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

RunConfig tinyConfig(int64_t steps) {
    RunConfig c;
    c.model = tinyTestModel(32, 32);
    c.train.micro_batch_size = 4;
    c.train.gradient_accumulation_steps = 2;
    c.train.seq_len = 32;
    c.train.steps = steps;
    c.train.lr = 3e-3;
    c.train.min_lr = 3e-4;
    c.train.warmup_steps = 2;
    c.data.concentration = 0.05;
    c.runtime.threads = 1;
    return c;
}

std::vector<double> lossesOf(const BusBatch& batch) {
    std::vector<double> out;
    for (const auto& p : batch.points)
        if (p.key == "train/loss") out.push_back(p.value);
    return out;
}

}  // namespace

class TestTrainingSession : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void lossFallsOverTwentySteps() {
        TrainingSession session(tinyConfig(20));
        auto inbox = session.bus().subscribe();
        session.start();
        QVERIFY(session.wait(std::chrono::minutes(5)));
        RunSummary summary = session.summary();
        QCOMPARE(summary.status, RunStatus::Completed);
        QCOMPARE(summary.steps, int64_t(20));
        QCOMPARE(summary.tokens, int64_t(20 * 8 * 32));
        auto losses = lossesOf(inbox->drain());
        QCOMPARE(losses.size(), size_t(20));
        for (double l : losses) QVERIFY(std::isfinite(l));
        // Uniform guessing over 32 tokens costs ln 32 = 3.466 nats; the first step starts near it.
        QVERIFY2(std::fabs(losses.front() - std::log(32.0)) < 0.3, qPrintable(QString::number(losses.front())));
        const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[17] + losses[18] + losses[19]) / 3;
        QVERIFY2(last < first - 0.3, qPrintable(QString("first %1 last %2").arg(first).arg(last)));
        QCOMPARE(summary.final_loss, losses.back());
    }

    void metricsCarryStepsTokensAndEntropyFloor() {
        TrainingSession session(tinyConfig(3));
        auto inbox = session.bus().subscribe();
        session.start();
        QVERIFY(session.wait(std::chrono::minutes(2)));
        BusBatch batch = inbox->drain();
        int64_t expected_step = 1;
        bool floor_seen = false;
        for (const auto& p : batch.points) {
            if (p.key == "data/entropy_floor") {
                floor_seen = true;
                QVERIFY(p.value > 0 && p.value < std::log(32.0));
            }
            if (p.key != "train/loss") continue;
            QCOMPARE(p.step, expected_step);
            QCOMPARE(p.tokens, expected_step * 8 * 32);
            ++expected_step;
        }
        QVERIFY(floor_seen);
        QCOMPARE(expected_step, int64_t(4));
        bool completed = false;
        for (const auto& e : batch.events) completed = completed || (e.kind == "status" && e.message == "completed");
        QVERIFY(completed);
    }

    void stopJoinsEveryThread() {
        TrainingSession session(tinyConfig(100000));
        session.start();
        QVERIFY(session.liveThreads() >= 1);
        QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() >= 2, 60000);
        session.stop();
        QVERIFY(session.wait(std::chrono::seconds(60)));
        QCOMPARE(session.liveThreads(), 0);
        QCOMPARE(session.status(), RunStatus::Stopped);
        QVERIFY(session.summary().steps >= 2);
    }

    void pauseHoldsAtABoundary() {
        TrainingSession session(tinyConfig(100000));
        session.start();
        QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() >= 1, 60000);
        session.pause();
        QCOMPARE(session.status(), RunStatus::Paused);
        // After the pause lands, the step counter stays put while the ranks wait at the gate.
        const int64_t held = session.completedSteps();
        QTest::qWait(300);
        QVERIFY(session.completedSteps() <= held + 1);
        const int64_t frozen = session.completedSteps();
        QTest::qWait(300);
        QCOMPARE(session.completedSteps(), frozen);
        session.resume();
        QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() > frozen, 60000);
        session.stop();
        QVERIFY(session.wait(std::chrono::seconds(60)));
    }

    void resumedRateCountsOnlyThisSessionsTokens() {
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        const std::string checkpoints = folder.path().toStdString();
        {
            RunConfig first = tinyConfig(6);
            first.train.checkpoint_every = 3;
            TrainingSession session(first, SessionOptions{"rate", checkpoints, ""});
            session.start();
            QVERIFY(session.wait(std::chrono::minutes(5)));
            QCOMPARE(session.summary().status, RunStatus::Completed);
        }
        // Continue the 6 finished steps to 10: 4 steps of 8 x 32 tokens happen in this session.
        RunConfig longer = tinyConfig(10);
        longer.train.checkpoint_every = 3;
        TrainingSession resumed(longer, SessionOptions{"rate", "", checkpoints + "/step-00000006"});
        resumed.start();
        QVERIFY(resumed.wait(std::chrono::minutes(5)));
        const RunSummary s = resumed.summary();
        QCOMPARE(s.status, RunStatus::Completed);
        QCOMPARE(s.tokens, int64_t(10 * 8 * 32));
        QVERIFY(s.wall_time_s > 0);
        const double session_tokens = s.tokens_per_s * s.wall_time_s;
        QVERIFY2(std::fabs(session_tokens - 4 * 8 * 32) < 1e-6 * 4 * 8 * 32, qPrintable(QString::number(session_tokens)));
    }

    void invalidConfigIsRefusedBeforeAnyThread() {
        RunConfig bad = tinyConfig(5);
        bad.model.n_activated_experts = 9;
        QVERIFY_THROWS_EXCEPTION(ConfigError, TrainingSession{bad});
    }
};

QTEST_APPLESS_MAIN(TestTrainingSession)
#include "test_training_session.moc"
