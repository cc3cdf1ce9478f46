// Live advice suite: the detectors on synthetic series with known answers.
#include <QtTest/QtTest>

#include <cmath>

#include "trainbench/live_advice.h"

using namespace trainbench;

class TestLiveAdvice : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void aLossSpikeFiresOnceWithItsZScore() {
        LossSpikeDetector detector(64, 5.0, 16);
        std::vector<double> series;
        for (int i = 0; i < 100; ++i) series.push_back(2.0 + 0.01 * std::sin(0.7 * i));
        for (int i = 0; i < 100; ++i) QVERIFY(!detector.observe(i + 1, series[i]).has_value());
        // The z-score by hand: population mean and deviation of the last 64 values.
        double mean = 0, sq = 0;
        for (int i = 36; i < 100; ++i) mean += series[i];
        mean /= 64;
        for (int i = 36; i < 100; ++i) sq += (series[i] - mean) * (series[i] - mean);
        const double expected_z = (2.5 - mean) / std::sqrt(sq / 64);
        auto message = detector.observe(101, 2.5);
        QVERIFY(message.has_value());
        QVERIFY(std::fabs(detector.lastZScore() - expected_z) < 1e-9 * expected_z);
        QVERIFY2(QString::fromStdString(*message).contains("train.gradient_accumulation_steps"), message->c_str());
        QVERIFY(QString::fromStdString(*message).contains("step 101"));
        // A second spike right after stays quiet (one remark per window).
        QVERIFY(!detector.observe(102, 2.6).has_value());
    }

    void aFallingLossIsNoSpike() {
        LossSpikeDetector detector;
        for (int i = 0; i < 500; ++i)
            QVERIFY(!detector.observe(i + 1, 3.0 * std::exp(-i / 80.0) + 0.02 * std::sin(1.3 * i)).has_value());
        // Too few samples: never fires, whatever the value.
        LossSpikeDetector fresh(64, 5.0, 16);
        for (int i = 0; i < 15; ++i) fresh.observe(i + 1, 1.0 + 0.001 * i);
        QVERIFY(!fresh.observe(16, 100.0).has_value());
    }

    void expertImbalanceNamesTheLayerAndExpert() {
        ExpertImbalanceDetector detector(50, 3.0);
        std::vector<double> uniform(8, 10.0);
        for (int s = 1; s <= 50; ++s) QVERIFY(!detector.observe(s, 1, uniform).has_value());
        // Expert 3 takes 50 of 85 tokens every step: 50 / (85 / 8) = 4.7x the mean.
        std::vector<double> skewed(8, 5.0);
        skewed[3] = 50.0;
        std::optional<std::string> message;
        for (int s = 51; s <= 100; ++s) {
            message = detector.observe(s, 2, skewed);
            if (s < 100) QVERIFY(!message.has_value());
        }
        QVERIFY(message.has_value());
        const QString text = QString::fromStdString(*message);
        QVERIFY2(text.contains("layer 2") && text.contains("expert 3") && text.contains("4.71x"), message->c_str());
        QVERIFY(text.contains("steps 51-100"));
        QVERIFY(text.contains("model.bias_update_speed"));
    }

    // Expert parallelism, EP 2 of W 4 (experts 0-3 on ranks 0 and 2, 4-7 on 1 and 3): rank 1
    // receiving 200 rows a step against 100 elsewhere is 200 / 125 = 1.6x the mean over the
    // window; an even share says nothing.
    void theBusiestRankOfAnExchangeIsNamedWithItsExperts() {
        RankImbalanceAdvisor advisor(20, 1.25);
        for (int s = 1; s <= 20; ++s) QVERIFY(!advisor.observe(s, {100, 110, 95, 105}, 2, 8).has_value());
        std::optional<std::string> message;
        for (int s = 21; s <= 40; ++s) {
            message = advisor.observe(s, {100, 200, 100, 100}, 2, 8);
            if (s < 40) QVERIFY(!message.has_value());
        }
        QVERIFY(message.has_value());
        const QString text = QString::fromStdString(*message);
        QVERIFY2(text.contains("steps 21-40") && text.contains("rank 1 (experts 4-7") && text.contains("1.6x"),
                 message->c_str());
    }

    // The critical batch 3.5x B = 16 (m 2 x W 2 a step, K 4): raise K to 4 x 3 = 12, B 48, once,
    // and only when the estimate is steady; far below B it says tokens are wasted.
    void theCriticalBatchSuggestsAnAccumulationThatFitsIt() {
        CriticalBatchAdvisor advisor(2.0, 0.3, 100, /*steady_steps=*/3);
        QVERIFY(!advisor.observe(10, 56.0, 0.5, 16, 4, 4));  // too uncertain yet
        QVERIFY(!advisor.observe(11, 20.0, 0.1, 16, 4, 4));  // within a factor of two: no verdict
        QVERIFY(!advisor.observe(12, 56.0, 0.1, 16, 4, 4));  // a stretch begins
        QVERIFY(!advisor.observe(13, 58.0, 0.1, 16, 4, 4));
        const auto raise = advisor.observe(14, 56.0, 0.1, 16, 4, 4);  // held three steps
        QVERIFY(raise.has_value());
        QVERIFY2(raise->find("~3.5x") != std::string::npos && raise->find("from 4 to 12 (B 48") != std::string::npos &&
                     raise->find("held for 3 steps, since step 12 at 56 sequences") != std::string::npos,
                 raise->c_str());
        QVERIFY(!advisor.observe(50, 56.0, 0.1, 16, 4, 4));  // quiet for 100 steps
        for (int64_t step = 200; step < 202; ++step) QVERIFY(!advisor.observe(step, 3.0, 0.1, 16, 4, 4));
        const auto waste = advisor.observe(202, 3.0, 0.1, 16, 4, 4);
        QVERIFY(waste.has_value());
        QVERIFY2(waste->find("~5x the critical batch") != std::string::npos && waste->find("wasted") != std::string::npos,
                 waste->c_str());
    }

    // The small preset's case: an estimate still falling fourfold after the warm-up (300 -> 76
    // sequences over ten steps, B 16) gives no advice while it moves (each stretch within 25 % of
    // its start lasts two steps), nor during the warm-up however steady; once it holds for the
    // steady stretch it fires, saying since when. A too-uncertain estimate starts it again.
    void theCriticalBatchAdviceWaitsForItsEvidence() {
        CriticalBatchAdvisor advisor(2.0, 0.3, 1000, /*steady_steps=*/5, /*after_step=*/20);
        for (int64_t step = 1; step <= 20; ++step) QVERIFY2(!advisor.observe(step, 300.0, 0.05, 16, 4, 4), "in the warm-up");
        const double falling[] = {300, 257, 220, 189, 162, 139, 119, 102, 88, 76};
        int64_t step = 21;
        for (double estimate : falling) QVERIFY2(!advisor.observe(step++, estimate, 0.1, 16, 4, 4), "still moving");
        // The stretch that began at 88 (step 29) holds: the fifth step within its band is step 33.
        QVERIFY(!advisor.observe(step++, 78, 0.1, 16, 4, 4));
        QVERIFY(!advisor.observe(step++, 74, 0.1, 16, 4, 4));
        const auto advice = advisor.observe(step++, 77, 0.1, 16, 4, 4);
        QVERIFY(advice.has_value());
        QVERIFY2(advice->find("held for 5 steps, since step 29 at 88 sequences, after the learning-rate warm-up") !=
                     std::string::npos,
                 advice->c_str());

        CriticalBatchAdvisor restarted(2.0, 0.3, 1000, /*steady_steps=*/3);
        QVERIFY(!restarted.observe(1, 76, 0.1, 16, 4, 4));
        QVERIFY(!restarted.observe(2, 76, 0.1, 16, 4, 4));
        QVERIFY(!restarted.observe(3, 76, 0.4, 16, 4, 4));  // too uncertain: starts again
        QVERIFY(!restarted.observe(4, 76, 0.1, 16, 4, 4));
        QVERIFY(!restarted.observe(5, 76, 0.1, 16, 4, 4));
        QVERIFY(restarted.observe(6, 76, 0.1, 16, 4, 4).has_value());
    }

    void throughputBelowTheExplorersBestSuggestsItsSplit() {
        ThroughputWatch watch(ExploredBest{16, 1, 1000.0}, 4, 20, 0.7);
        for (int s = 1; s <= 40; ++s) QVERIFY(!watch.observe(s, 800.0).has_value());  // 80%: fine
        std::optional<std::string> message;
        int fired = 0;
        for (int s = 41; s <= 80; ++s)
            if (auto m = watch.observe(s, 500.0)) message = m, ++fired;
        QCOMPARE(fired, 1);
        QVERIFY2(QString::fromStdString(*message).contains("--set train.micro_batch_size=16"), message->c_str());
        // No best known: never fires.
        ThroughputWatch unknown(ExploredBest{}, 4);
        for (int s = 1; s <= 100; ++s) QVERIFY(!unknown.observe(s, 1.0).has_value());
    }
};

QTEST_APPLESS_MAIN(TestLiveAdvice)
#include "test_live_advice.moc"
