// Tests seed grouping: which configs form a group, and the per-step mean, min and max against hand-computed numbers.
#include <cmath>
#include <string>
#include <vector>

#include <QTest>

#include "compare/seed_groups.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

MetricPoint point(int64_t step, int64_t tokens, double wall_time, double value) {
    MetricPoint p;
    p.step = step;
    p.tokens = tokens;
    p.wall_time = wall_time;
    p.key = "train/loss";
    p.value = value;
    return p;
}

}  // namespace

class TestSeedGroups : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void configsDifferingOnlyInSeedsShareAGroup();
    void groupNameDropsTheSeed();
    void bandIsMeanMinMaxPerStep();
    void runsOfDifferentLengthsCountWhereTheyHavePoints();
    void nonFiniteValuesAreLeftOutOfTheValues();
};

void TestSeedGroups::configsDifferingOnlyInSeedsShareAGroup() {
    const std::vector<std::string> configs = {
        R"({"train": {"lr": 0.001, "seed": 1}, "data": {"seed": 5}})",   // 0
        R"({"train": {"lr": 0.002, "seed": 1}, "data": {"seed": 5}})",   // 1: another lr
        R"({"train": {"lr": 0.001, "seed": 2}, "data": {"seed": 6}})",   // 2: seeds only -> with 0
        R"({"train": {"lr": 0.001, "seed": 3}, "data": {"seed": 5}})",   // 3: train.seed only -> with 0
        R"({"train": {"lr": 0.002, "seed": 9}, "data": {"seed": 5}})",   // 4: with 1
        R"(not json)",                                                   // 5: alone
        R"(not json either)",                                            // 6: alone, not with 5
    };
    const std::vector<std::vector<size_t>> groups = groupBySeed(configs);
    const std::vector<std::vector<size_t>> expected = {{0, 2, 3}, {1, 4}, {5}, {6}};
    QCOMPARE(groups, expected);
    QVERIFY(hasSeedGroup(groups));
    QVERIFY(!hasSeedGroup(groupBySeed({configs[0], configs[1]})));
    QVERIFY(groupBySeed({}).empty());
}

void TestSeedGroups::bandIsMeanMinMaxPerStep() {
    const std::vector<std::vector<MetricPoint>> series = {
        {point(1, 100, 1.0, 3.0), point(2, 200, 2.0, 2.0)},
        {point(1, 110, 1.5, 5.0), point(2, 220, 3.0, 4.0)},
        {point(1, 120, 2.0, 4.0), point(2, 240, 4.0, 0.5)},
    };
    const std::vector<SeedBandPoint> band = seedBand(series);
    QCOMPARE(band.size(), size_t{2});
    QCOMPARE(band[0].step, int64_t{1});
    QCOMPARE(band[0].tokens, 110.0);
    QCOMPARE(band[0].wall_time, 1.5);
    QCOMPARE(band[0].mean, 4.0);
    QCOMPARE(band[0].min, 3.0);
    QCOMPARE(band[0].max, 5.0);
    QCOMPARE(band[0].values, 3);
    QCOMPARE(band[1].step, int64_t{2});
    QCOMPARE(band[1].tokens, 220.0);
    QCOMPARE(band[1].wall_time, 3.0);
    QCOMPARE(band[1].mean, 6.5 / 3.0);
    QCOMPARE(band[1].min, 0.5);
    QCOMPARE(band[1].max, 4.0);
}

void TestSeedGroups::runsOfDifferentLengthsCountWhereTheyHavePoints() {
    // Run 0 logs steps 1..3, run 1 steps 1..4, run 2 steps 2 and 4 only.
    const std::vector<std::vector<MetricPoint>> series = {
        {point(1, 10, 1, 3.0), point(2, 20, 2, 2.0), point(3, 30, 3, 1.0)},
        {point(1, 10, 1, 5.0), point(2, 20, 2, 4.0), point(3, 30, 3, 2.0), point(4, 40, 4, 1.5)},
        {point(2, 24, 2, 3.0), point(4, 48, 4, 2.5)},
    };
    const std::vector<SeedBandPoint> band = seedBand(series);
    QCOMPARE(band.size(), size_t{4});
    QCOMPARE(band[0].mean, 4.0);  // runs 0 and 1
    QCOMPARE(band[0].values, 2);
    QCOMPARE(band[1].mean, 3.0);  // all three
    QCOMPARE(band[1].tokens, (20.0 + 20.0 + 24.0) / 3.0);
    QCOMPARE(band[1].min, 2.0);
    QCOMPARE(band[1].max, 4.0);
    QCOMPARE(band[2].mean, 1.5);  // runs 0 and 1
    QCOMPARE(band[3].step, int64_t{4});
    QCOMPARE(band[3].mean, 2.0);  // runs 1 and 2
    QCOMPARE(band[3].tokens, 44.0);
    QCOMPARE(band[3].min, 1.5);
    QCOMPARE(band[3].max, 2.5);
    QCOMPARE(band[3].values, 2);
}

void TestSeedGroups::nonFiniteValuesAreLeftOutOfTheValues() {
    const double nan = std::nan("");
    const std::vector<std::vector<MetricPoint>> series = {
        {point(1, 10, 1, nan), point(2, 20, 2, nan)},
        {point(1, 30, 1, 6.0), point(2, 40, 2, INFINITY)},
    };
    const std::vector<SeedBandPoint> band = seedBand(series);
    QCOMPARE(band.size(), size_t{2});
    QCOMPARE(band[0].mean, 6.0);
    QCOMPARE(band[0].values, 1);
    QCOMPARE(band[0].tokens, 20.0);  // both runs have a point here
    QVERIFY(std::isnan(band[1].mean) && std::isnan(band[1].min) && std::isnan(band[1].max));
    QCOMPARE(band[1].values, 0);
}

void TestSeedGroups::groupNameDropsTheSeed() {
    QCOMPARE(seedGroupName("tiny seed=1 lr=1e-2"), std::string("tiny lr=1e-2"));
    QCOMPARE(seedGroupName("tiny lr=1e-2 seed=12"), std::string("tiny lr=1e-2"));
    QCOMPARE(seedGroupName("baseline"), std::string("baseline"));
    QCOMPARE(seedGroupName("seed=4"), std::string("seed=4"));
    // Only a word that starts with "seed=" goes.
    QCOMPARE(seedGroupName("reseed=2 run"), std::string("reseed=2 run"));
}

QTEST_MAIN(TestSeedGroups)
#include "test_seed_groups.moc"
