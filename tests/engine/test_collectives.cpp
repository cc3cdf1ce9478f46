// Collectives suite: the in-process hub's reduce-scatter and all-gather (the calls the sharded
// stages make), on rank threads, against sums written out by hand.
#include <QtTest/QtTest>

#include <functional>
#include <thread>

#include "comm/in_process_collectives.h"
#include "train/window_statistics.h"

using namespace trainbench;

namespace {

// Runs `body(rank, collectives)` on W rank threads of one hub and joins them.
void onRanks(int W, const std::function<void(int, Collectives&)>& body) {
    auto hub = std::make_shared<CollectiveHub>(W, std::chrono::seconds(30));
    std::vector<std::unique_ptr<InProcessCollectives>> ranks;
    for (int r = 0; r < W; ++r) ranks.push_back(std::make_unique<InProcessCollectives>(hub, r, W));
    std::vector<std::thread> threads;
    for (int r = 0; r < W; ++r) threads.emplace_back([&, r] { body(r, *ranks[r]); });
    for (auto& t : threads) t.join();
}

// Rank r's input: element i is 100 r + i (exact in fp32 and fp64).
torch::Tensor inputOf(int rank, int64_t numel, torch::ScalarType dtype) {
    return torch::arange(numel, torch::TensorOptions().dtype(dtype)) + 100.0 * rank;
}

}  // namespace

class TestCollectives : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The window's statistics by slot, summed over 3 ranks in one call: tensors of any dtype and
    // shape, host numbers, and per-rank slots each rank fills alone; each slot reads its own
    // sums back, in whichever order the slots were added.
    void windowStatisticsRoundTripByName() {
        const int W = 3;
        std::vector<std::vector<double>> read(W);
        std::vector<int64_t> calls(W);
        onRanks(W, [&](int r, Collectives& c) {
            WindowStatistics stats(torch::Device("cpu"));
            const auto flag = stats.add(r == 1 ? 1.0 : 0.0);
            const auto loads = stats.add(torch::tensor({int64_t(r), int64_t(10), int64_t(100 * r)}));
            const auto peaks = stats.perRank(W, r, 1000.0 + r);
            const auto loss = stats.add(torch::full({2, 2}, 0.25 * (r + 1), torch::kFloat32));
            const auto count = stats.add(double(7 * r));
            const int64_t before = c.calls();
            stats.reduce(c);
            calls[r] = c.calls() - before;
            QCOMPARE(stats.size(loads), int64_t(3));
            QCOMPARE(stats.size(peaks), int64_t(W));
            auto& out = read[r];
            out.push_back(stats.value(flag));
            for (int64_t i = 0; i < 3; ++i) out.push_back(stats.value(loads, i));
            for (int64_t i = 0; i < W; ++i) out.push_back(stats.value(peaks, i));
            out.push_back(stats.tensor(loss).sum().item<double>());
            out.push_back(stats.value(count));
        });
        // Hand sums: flag 1; loads (0+1+2, 30, 300); peaks 1000, 1001, 1002; the loss tensor's
        // four elements of (1 + 2 + 3) / 4 each; counts 0 + 7 + 14.
        const std::vector<double> expected{1, 3, 30, 300, 1000, 1001, 1002, 6, 21};
        for (int r = 0; r < W; ++r) {
            QCOMPARE(read[r], expected);
            QCOMPARE(calls[r], int64_t(1));
        }
        WindowStatistics early(torch::Device("cpu"));
        const auto slot = early.add(1.0);
        QVERIFY_THROWS_EXCEPTION(std::logic_error, early.value(slot));
    }

    // Slice r of the sum over 3 ranks of (100 q + i): 3 i + 300, element by element.
    void reduceScatterLeavesEachRankItsSliceOfTheSum() {
        const int W = 3;
        const int64_t n = 4;
        std::vector<torch::Tensor> outputs(W), in_place(W);
        std::vector<int64_t> calls(W);
        onRanks(W, [&](int r, Collectives& c) {
            auto input = inputOf(r, W * n, torch::kFloat32);
            outputs[r] = torch::full({n}, -1.0f);
            c.reduceScatterAsync(input, outputs[r])->wait();
            // In place: the output is this rank's own slice of the input (as the buckets do).
            auto flat = inputOf(r, W * n, torch::kFloat64);
            c.reduceScatterAsync(flat, flat.narrow(0, r * n, n))->wait();
            in_place[r] = flat.narrow(0, r * n, n).clone();
            calls[r] = c.calls();
        });
        for (int r = 0; r < W; ++r) QCOMPARE(calls[r], int64_t(2));
        for (int r = 0; r < W; ++r)
            for (int64_t j = 0; j < n; ++j) {
                const double expected = 3.0 * double(r * n + j) + 300.0;
                QCOMPARE(outputs[r][j].item<double>(), expected);
                QCOMPARE(in_place[r][j].item<double>(), expected);
            }
    }

    void allGatherConcatenatesInRankOrder() {
        const int W = 4;
        const int64_t n = 3;
        std::vector<torch::Tensor> gathered(W), in_place(W);
        onRanks(W, [&](int r, Collectives& c) {
            auto mine = torch::full({n}, double(r + 1), torch::kFloat32);
            gathered[r] = torch::zeros({W * n});
            c.allGatherAsync(mine, gathered[r])->wait();
            // In place: the input is this rank's slice of the output.
            in_place[r] = torch::full({W * n}, -7.0f);
            in_place[r].narrow(0, r * n, n).fill_(10.0 * (r + 1));
            c.allGatherAsync(in_place[r].narrow(0, r * n, n), in_place[r])->wait();
        });
        for (int r = 0; r < W; ++r)
            for (int q = 0; q < W; ++q)
                for (int64_t j = 0; j < n; ++j) {
                    QCOMPARE(gathered[r][q * n + j].item<double>(), double(q + 1));
                    QCOMPARE(in_place[r][q * n + j].item<double>(), 10.0 * (q + 1));
                }
    }

    void oneRankCopiesOrLeavesInPlace() {
        auto input = torch::arange(5, torch::kFloat32);
        auto output = torch::zeros({5}), gathered = torch::zeros({5});
        onRanks(1, [&](int, Collectives& c) {
            c.reduceScatterAsync(input, output)->wait();
            c.allGatherAsync(input, gathered)->wait();
            c.reduceScatterAsync(input, input)->wait();  // the same tensor: nothing to do
        });
        QVERIFY(torch::equal(output, input));
        QVERIFY(torch::equal(gathered, input));
        QVERIFY(torch::equal(input, torch::arange(5, torch::kFloat32)));
    }

    // A size that does not divide among the ranks is a bug: every rank is told, none hangs.
    void mismatchedSizesAbortEveryRank() {
        std::vector<QString> errors(2);
        onRanks(2, [&](int r, Collectives& c) {
            try {
                c.reduceScatterAsync(torch::zeros({5}), torch::zeros({2}))->wait();
            } catch (const CollectiveAborted& e) {
                errors[r] = e.what();
            }
        });
        for (const QString& e : errors) QVERIFY2(e.contains("world size"), qPrintable(e));
    }
};

QTEST_APPLESS_MAIN(TestCollectives)
#include "test_collectives.moc"
