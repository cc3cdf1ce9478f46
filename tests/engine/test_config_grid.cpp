// Config grid suite: the combinations, the kept global batch, and refusals that name the field.
#include <QtTest/QtTest>

#include "trainbench/config_grid.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"

using namespace trainbench;

namespace {

// m 2 x K 4 x W 1 = a global batch of 8 sequences.
RunConfig baseConfig() {
    RunConfig config = builtinTinyConfig();
    config.train.micro_batch_size = 2;
    config.train.gradient_accumulation_steps = 4;
    config.train.lr = 1e-3;
    config.train.min_lr = 0;
    return config;
}

// Runs `expand` and returns the ConfigError's path and message ("" when nothing was thrown).
template <typename F>
std::pair<std::string, std::string> refusal(F expand) {
    try {
        expand();
    } catch (const ConfigError& error) {
        return {error.path(), error.what()};
    }
    return {};
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

class TestConfigGrid : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void twoFieldsMakeEveryCombinationOuterFirst() {
        const auto points = expandConfigGrid(baseConfig(), {{"train.lr", {"1e-3", "3e-4"}}, {"train.seed", {"1", "2", "3"}}},
                                             /*keep_global_batch=*/true);
        QCOMPARE(points.size(), size_t(6));
        QCOMPARE(points[0].label(), std::string("lr=1e-3 seed=1"));
        QCOMPARE(points[2].label(), std::string("lr=1e-3 seed=3"));
        QCOMPARE(points[3].label(), std::string("lr=3e-4 seed=1"));
        QCOMPARE(points[3].config.train.lr, 3e-4);
        QCOMPARE(points[5].config.train.seed, int64_t(3));
        // Nothing else moved: the batch stays m 2 x K 4.
        for (const GridPoint& point : points) {
            QCOMPARE(point.config.train.micro_batch_size, int64_t(2));
            QCOMPARE(point.config.train.gradient_accumulation_steps, int64_t(4));
        }
    }

    void microBatchSizesKeepTheGlobalBatchThroughK() {
        const auto points = expandConfigGrid(baseConfig(), {{"train.micro_batch_size", {"1", "2", "4", "8"}}}, true);
        // K = 8 / (m x 1): 8, 4, 2, 1.
        const int64_t expected_k[] = {8, 4, 2, 1};
        QCOMPARE(points.size(), size_t(4));
        for (size_t i = 0; i < points.size(); ++i) {
            QCOMPARE(points[i].config.train.gradient_accumulation_steps, expected_k[i]);
            QCOMPARE(points[i].config.globalBatch(), int64_t(8));
        }
        QCOMPARE(points[0].label(), std::string("m=1 K=8"));
        // The base's own split needs no change, so none is listed.
        QCOMPARE(points[1].label(), std::string("m=2"));
    }

    void accumulationStepsKeepTheGlobalBatchThroughM() {
        const auto points = expandConfigGrid(baseConfig(), {{"train.gradient_accumulation_steps", {"1", "2"}}}, true);
        QCOMPARE(points[0].config.train.micro_batch_size, int64_t(8));
        QCOMPARE(points[1].config.train.micro_batch_size, int64_t(4));
        QCOMPARE(points[1].label(), std::string("K=2 m=4"));
    }

    void aFixedGlobalBatchInTheConfigFollowsTheGrid() {
        RunConfig base = baseConfig();
        base.train.global_batch_size = 8;
        // Kept: the field stays 8 and validates.
        auto kept = expandConfigGrid(base, {{"train.micro_batch_size", {"4"}}}, true);
        QCOMPARE(*kept[0].config.train.global_batch_size, int64_t(8));
        QCOMPARE(kept[0].config.train.gradient_accumulation_steps, int64_t(2));
        // Free: m 4 x K 4 = 16, and the field says 16 rather than refusing the point.
        auto free = expandConfigGrid(base, {{"train.micro_batch_size", {"4"}}}, false);
        QCOMPARE(free[0].config.train.gradient_accumulation_steps, int64_t(4));
        QCOMPARE(*free[0].config.train.global_batch_size, int64_t(16));
    }

    void aGridOverTheGlobalBatchSetsTheTarget() {
        const auto points = expandConfigGrid(baseConfig(), {{"train.global_batch_size", {"8", "16", "32"}}}, true);
        QCOMPARE(points[1].config.train.gradient_accumulation_steps, int64_t(8));
        QCOMPARE(points[2].config.train.gradient_accumulation_steps, int64_t(16));
        QCOMPARE(points[2].config.train.micro_batch_size, int64_t(2));
        QCOMPARE(points[2].label(), std::string("B=32 K=16"));
    }

    void aMicroBatchThatDoesNotDivideIsRefusedWithTheValidOnes() {
        auto [path, message] = refusal([] {
            expandConfigGrid(baseConfig(), {{"train.micro_batch_size", {"2", "3"}}, {"train.lr", {"1e-3"}}}, true);
        });
        QCOMPARE(path, std::string("train.micro_batch_size"));
        QVERIFY2(contains(message, "grid point m=3 lr=1e-3") && contains(message, "1, 2, 4, 8"), message.c_str());
    }

    void bothBatchFactorsOffTheGlobalBatchAreRefused() {
        // m 2 x K 4 keeps 8; m 4 x K 4 does not.
        auto [path, message] = refusal([] {
            expandConfigGrid(baseConfig(),
                             {{"train.micro_batch_size", {"2", "4"}}, {"train.gradient_accumulation_steps", {"4"}}}, true);
        });
        QCOMPARE(path, std::string("train.gradient_accumulation_steps"));
        QVERIFY2(contains(message, "m 4 x K 4 x W 1 is not the global batch 8"), message.c_str());
    }

    void anInvalidPointIsRefusedWithTheValidatorsMessage() {
        auto [path, message] = refusal([] { expandConfigGrid(baseConfig(), {{"train.lr", {"1e-3", "-1"}}}, true); });
        QCOMPARE(path, std::string("train.lr"));
        QVERIFY2(contains(message, "grid point lr=-1: train.lr"), message.c_str());
    }

    void malformedGridsAreRefused() {
        auto unknown = refusal([] { expandConfigGrid(baseConfig(), {{"train.lrr", {"1"}}}, true); });
        QCOMPARE(unknown.first, std::string("train.lrr"));
        QVERIFY2(contains(unknown.second, "train.lr"), unknown.second.c_str());  // the suggestion
        QVERIFY2(!contains(unknown.second, "--set"), unknown.second.c_str());

        QCOMPARE(refusal([] { expandConfigGrid(baseConfig(), {}, true); }).first, std::string("grid"));
        QCOMPARE(refusal([] { expandConfigGrid(baseConfig(), {{"train.lr", {}}}, true); }).first, std::string("train.lr"));
        auto twice = refusal([] { expandConfigGrid(baseConfig(), {{"train.lr", {"1e-3", "1e-3"}}}, true); });
        QVERIFY2(contains(twice.second, "twice"), twice.second.c_str());
        auto same_field = refusal([] { expandConfigGrid(baseConfig(), {{"train.lr", {"1"}}, {"train.lr", {"2"}}}, true); });
        QVERIFY2(contains(same_field.second, "twice"), same_field.second.c_str());

        std::vector<std::string> nine;
        for (int i = 1; i <= 9; ++i) nine.push_back(std::to_string(i));
        auto too_many = refusal([&] { expandConfigGrid(baseConfig(), {{"train.seed", nine}, {"train.steps", nine}}, true); });
        QVERIFY2(contains(too_many.second, "81 runs"), too_many.second.c_str());
    }

    void valuesSplitOnCommasAndSpaces() {
        QCOMPARE(splitGridValues(" 1e-3, 3e-4 ,1e-4;2  "), (std::vector<std::string>{"1e-3", "3e-4", "1e-4", "2"}));
        QVERIFY(splitGridValues(" ,, ").empty());
    }
};

QTEST_APPLESS_MAIN(TestConfigGrid)
#include "test_config_grid.moc"
