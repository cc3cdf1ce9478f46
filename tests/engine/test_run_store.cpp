// Run store suite: schema, batched commits, ordering, concurrent reading, orphaned runs.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "trainbench/metric_bus.h"
#include "trainbench/run_store.h"
#include "trainbench/store_writer.h"

using namespace trainbench;

namespace {

RunRecord record(const std::string& id, const std::string& name) {
    RunRecord r;
    r.run_id = id;
    r.name = name;
    r.config_json = "{}";
    return r;
}

std::vector<MetricPoint> lossPoints(int64_t first, int64_t last) {
    std::vector<MetricPoint> points;
    for (int64_t s = first; s <= last; ++s) points.push_back({s, s * 100, 0.1 * double(s), "train/loss", 5.0 / double(s)});
    return points;
}

}  // namespace

class TestRunStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void createsSchemaAndListsNewestFirst() {
        QTemporaryDir dir;
        RunStore store(dir.path().toStdString());
        QCOMPARE(store.schemaVersion(), 1);
        store.createRun(record("aaa", "first"));
        store.createRun(record("bbb", "second"));
        auto runs = store.listRuns();
        QCOMPARE(runs.size(), size_t(2));
        QCOMPARE(runs[0].run_id, std::string("bbb"));
        QCOMPARE(runs[0].status, std::string("running"));
    }

    void pointsComeBackOrderedByStepPerKey() {
        QTemporaryDir dir;
        RunStore store(dir.path().toStdString());
        store.createRun(record("r", "r"));
        store.commitBatch("r", lossPoints(4, 6), {{4, 0.4, "checkpoint", "saved"}});
        store.commitBatch("r", lossPoints(1, 3), {});
        store.appendMetrics("r", {{2, 200, 0.2, "train/lr", 1e-3}, {3, 300, 0.3, "train/grad_norm", NAN}});
        auto loss = store.metrics("r", "train/loss");
        QCOMPARE(loss.size(), size_t(6));
        for (size_t i = 0; i < loss.size(); ++i) {
            QCOMPARE(loss[i].step, int64_t(i + 1));
            QCOMPARE(loss[i].value, 5.0 / double(i + 1));
        }
        QVERIFY(std::isnan(store.metrics("r", "train/grad_norm").front().value));  // non-finite survives as NaN
        QCOMPARE(store.metricKeys("r"), (std::vector<std::string>{"train/grad_norm", "train/loss", "train/lr"}));
        QCOMPARE(store.events("r").front().kind, std::string("checkpoint"));
        store.finishRun("r", "completed", 6, 5.0 / 6.0, "");
        auto run = store.findRun("r");
        QVERIFY(run.has_value());
        QCOMPARE(run->status, std::string("completed"));
        QCOMPARE(run->steps, int64_t(6));
        QCOMPARE(*run->final_loss, 5.0 / 6.0);
        store.setTags("r", "baseline,lr-sweep");
        store.setNotes("r", "first try");
        QCOMPARE(store.findRun("r")->tags, std::string("baseline,lr-sweep"));
        QCOMPARE(store.findRun("r")->notes, std::string("first try"));
    }

    void writerCommitsEverythingFromTheBus() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        RunStore store(folder);
        store.createRun(record("w", "w"));
        MetricBus bus;
        {
            StoreWriter writer(folder, "w", bus.subscribe(), std::chrono::milliseconds(20));
            for (int64_t s = 1; s <= 500; ++s) bus.publish(lossPoints(s, s));
            bus.publish(RunEvent{500, 1.0, "status", "completed"});
            bus.close();
        }
        QCOMPARE(store.metrics("w", "train/loss").size(), size_t(500));
        QCOMPARE(store.events("w").size(), size_t(1));
    }

    void readerSeesCommittedPointsWhileTheWriterWorks() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        RunStore(folder).createRun(record("live", "live"));
        std::atomic<bool> done{false};
        std::thread writer([&] {
            RunStore own(folder);
            for (int64_t s = 1; s <= 200; ++s) own.commitBatch("live", lossPoints(s, s), {});
            done = true;
        });
        RunStore reader(folder);
        size_t last = 0;
        bool monotone = true;
        while (!done) {
            size_t now = reader.metrics("live", "train/loss").size();
            monotone = monotone && now >= last;
            last = now;
        }
        writer.join();
        QVERIFY(monotone);
        QCOMPARE(reader.metrics("live", "train/loss").size(), size_t(200));
    }

    void aRunWhoseOwnerDiedIsInterrupted() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        RunStore(folder).createRun(record("mine", "alive"));  // owned by this (living) process
        pid_t child = fork();
        if (child == 0) {
            {
                RunStore store(folder);
                store.createRun(record("orphan", "dies"));
                store.appendMetrics("orphan", lossPoints(1, 3));
            }
            _exit(0);
        }
        int status = 0;
        waitpid(child, &status, 0);
        RunStore store(folder);
        QCOMPARE(store.findRun("orphan")->status, std::string("interrupted"));
        QCOMPARE(store.findRun("orphan")->steps, int64_t(3));  // from its points
        QCOMPARE(store.findRun("mine")->status, std::string("running"));
    }
};

QTEST_APPLESS_MAIN(TestRunStore)
#include "test_run_store.moc"
