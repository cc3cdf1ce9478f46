// Collectives suite: the calls the layouts make (reduce-scatter, all-gather, all-reduce,
// all-to-all, broadcast), on rank threads, against sums written out by hand; every test runs on
// both CPU engines: the in-process hub, and c10d's Gloo (what CPU ranks in separate processes
// use), here between threads of one process meeting through a HashStore.
#include <QtTest/QtTest>

#include <functional>
#include <thread>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "comm/gloo_collectives.h"
#include "comm/in_process_collectives.h"
#include "train/window_statistics.h"

using namespace trainbench;

namespace {

bool onGloo() {
    QFETCH_GLOBAL(QString, engine);
    return engine == "gloo";
}

// Each rank's collectives on the engine of the global data row ("hub" or "gloo"); Gloo groups
// connect as they are made, so each is made on its rank's thread.
std::vector<std::unique_ptr<Collectives>> makeRanks(int W, std::chrono::milliseconds timeout) {
    std::vector<std::unique_ptr<Collectives>> ranks(W);
    if (!onGloo()) {
        auto hub = std::make_shared<CollectiveHub>(W, timeout);
        for (int r = 0; r < W; ++r) ranks[r] = std::make_unique<InProcessCollectives>(hub, r, W);
        return ranks;
    }
    c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::HashStore>();
    std::vector<std::thread> threads;
    for (int r = 0; r < W; ++r)
        threads.emplace_back([&, r] {
            ranks[r] = makeGlooCollectives(store, r, W, timeout, /*across_processes=*/false, GlooNetwork::Loopback);
        });
    for (auto& t : threads) t.join();
    return ranks;
}

// Runs `body(rank, collectives)` on W rank threads and joins them.
void onRanks(int W, const std::function<void(int, Collectives&)>& body) {
    auto ranks = makeRanks(W, std::chrono::seconds(30));
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
    void initTestCase_data() {
        QTest::addColumn<QString>("engine");
        QTest::newRow("hub") << QString("hub");
        QTest::newRow("gloo") << QString("gloo");
    }

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
            } catch (const std::exception& e) {  // the hub aborts; c10d refuses the call
                errors[r] = e.what();
            }
        });
        for (const QString& e : errors)
            QVERIFY2(onGloo() ? !e.isEmpty() : e.contains("world size"), qPrintable(e));
    }

    // Expert parallelism's exchange with uneven splits, one of them empty: rank s sends
    // input_splits[d] rows to rank d; rows carry (100 s + 10 d + k) so each is traceable.
    void allToAllDeliversUnevenSplitsInRankOrder() {
        const int W = 3;
        // splits[s][d]: rows rank s sends rank d.
        const std::vector<std::vector<int64_t>> splits{{1, 0, 2}, {3, 1, 0}, {0, 2, 1}};
        std::vector<torch::Tensor> received(W);
        onRanks(W, [&](int r, Collectives& c) {
            std::vector<torch::Tensor> rows;
            for (int d = 0; d < W; ++d)
                for (int64_t k = 0; k < splits[r][d]; ++k) rows.push_back(torch::full({1, 2}, 100.0 * r + 10 * d + k));
            const auto input = torch::cat(rows);
            std::vector<int64_t> from(W);
            int64_t total = 0;
            for (int s2 = 0; s2 < W; ++s2) total += from[s2] = splits[s2][r];
            received[r] = torch::empty({total, 2});
            c.allToAll(input, received[r], splits[r], from);
        });
        for (int d = 0; d < W; ++d) {
            int64_t row = 0;
            for (int s2 = 0; s2 < W; ++s2)
                for (int64_t k = 0; k < splits[s2][d]; ++k, ++row) {
                    QCOMPARE(received[d][row][0].item<double>(), 100.0 * s2 + 10 * d + k);
                    QCOMPARE(received[d][row][1].item<double>(), 100.0 * s2 + 10 * d + k);
                }
            QCOMPARE(received[d].size(0), row);
        }
    }

    // All-reduce over several tensors of one call (each reduced on its own, never into each
    // other): fp32 sum, a strided view, bf16 (small integers: exact), int64 max; and a broadcast.
    void allReduceEachTensorOnItsOwn() {
        const int W = 3;
        std::vector<std::vector<torch::Tensor>> out(W);
        onRanks(W, [&](int r, Collectives& c) {
            auto plain = inputOf(r, 4, torch::kFloat32);
            auto matrix = inputOf(r, 6, torch::kFloat32).reshape({2, 3});
            auto column = matrix.select(1, 1);  // strided
            auto bf16 = torch::full({3}, double(r + 1), torch::kBFloat16);
            std::vector<torch::Tensor> sums{plain, column, bf16};
            c.allReduce(sums, ReduceOp::Sum);
            std::vector<torch::Tensor> peaks{torch::tensor({int64_t(5 * r), int64_t(7 - r)})};
            c.allReduce(peaks, ReduceOp::Max);
            std::vector<torch::Tensor> shared{torch::full({2}, double(r))};
            c.broadcast(shared, 2);
            out[r] = {plain, matrix, bf16, peaks[0], shared[0]};
        });
        for (int r = 0; r < W; ++r) {
            for (int64_t i = 0; i < 4; ++i) QCOMPARE(out[r][0][i].item<double>(), 3.0 * i + 300);
            // Only the column was reduced: elements 1 and 4 of the 2 x 3 matrix.
            QCOMPARE(out[r][1][0][1].item<double>(), 3.0 + 300);
            QCOMPARE(out[r][1][1][1].item<double>(), 12.0 + 300);
            QCOMPARE(out[r][1][0][0].item<double>(), 100.0 * r);
            for (int64_t i = 0; i < 3; ++i) QCOMPARE(out[r][2][i].item<double>(), 6.0);
            QCOMPARE(out[r][3][0].item<int64_t>(), int64_t(10));
            QCOMPARE(out[r][3][1].item<int64_t>(), int64_t(7));
            QCOMPARE(out[r][4][0].item<double>(), 2.0);
        }
    }

    // abort() releases this rank's wait at once with its reason, whoever is missing.
    void abortReleasesAWaitingRank() {
        auto ranks = makeRanks(2, std::chrono::seconds(60));
        QString error;
        std::thread waiting([&] {
            try {
                std::vector<torch::Tensor> t{torch::ones({3})};
                ranks[0]->allReduce(t, ReduceOp::Sum);  // rank 1 never comes
            } catch (const CollectiveAborted& e) {
                error = e.what();
            }
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ranks[0]->abort("stop requested");
        ranks[1]->abort("stop requested");
        waiting.join();
        QVERIFY2(error.contains("stop requested"), qPrintable(error));
    }

    // Gloo: a peer whose group goes away mid-collective (as a killed process's does) fails the
    // survivor's collective, and the roll call names the lost rank and the collective.
    void glooNamesTheLostRank() {
        if (!onGloo()) QSKIP("the hub's ranks cannot vanish: they are threads of one hub");
        auto ranks = makeRanks(2, std::chrono::seconds(4));
        QString error;
        std::thread survivor([&] {
            try {
                std::vector<torch::Tensor> t{torch::ones({3})};
                ranks[0]->allReduce(t, ReduceOp::Sum);
            } catch (const CollectiveAborted& e) {
                error = e.what();
            }
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ranks[1].reset();  // its connections close, as a killed process's do
        survivor.join();
        QVERIFY2(error.contains("all_reduce #1"), qPrintable(error));
        QVERIFY2(error.contains("rank 1 of 2 is lost"), qPrintable(error));
    }
};

QTEST_APPLESS_MAIN(TestCollectives)
#include "test_collectives.moc"
