// Run store suite: schema, batched commits, ordering, concurrent reading, orphaned runs.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <limits>
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

// A store as version 1 of the schema wrote it: frozen here, independent of the code under test.
const char* const kVersion1Store = R"sql(
CREATE TABLE runs(
  id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL, created TEXT NOT NULL,
  finished TEXT, config TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '', notes TEXT NOT NULL DEFAULT '',
  parent TEXT, error TEXT, steps INTEGER NOT NULL DEFAULT 0, final_loss REAL,
  owner_pid INTEGER, owner_host TEXT, heartbeat REAL);
CREATE TABLE metrics(run TEXT NOT NULL, step INTEGER NOT NULL, tokens INTEGER NOT NULL,
  wall_time REAL NOT NULL, key TEXT NOT NULL, value REAL);
CREATE INDEX metrics_by_run_key_step ON metrics(run, key, step);
CREATE TABLE events(run TEXT NOT NULL, step INTEGER NOT NULL, time REAL NOT NULL, kind TEXT NOT NULL,
  message TEXT NOT NULL);
CREATE INDEX events_by_run ON events(run, step);
CREATE TABLE checkpoints(run TEXT NOT NULL, step INTEGER NOT NULL, path TEXT NOT NULL, checksum TEXT NOT NULL);
INSERT INTO runs(id, name, status, created, finished, config, tags, steps, final_loss)
  VALUES('old1', 'from last year', 'completed', '2025-11-02T10:00:00Z', '2025-11-02T10:05:00Z', '{"a":1}', 'base', 3, 1.25);
INSERT INTO metrics VALUES('old1', 1, 64, 0.5, 'train/loss', 3.5), ('old1', 2, 128, 1.0, 'train/loss', 2.0),
  ('old1', 3, 192, 1.5, 'train/loss', 1.25);
INSERT INTO events VALUES('old1', 3, 1.5, 'checkpoint', '/tmp/old1/step-00000003');
INSERT INTO checkpoints VALUES('old1', 3, '/tmp/old1/step-00000003', '');
PRAGMA user_version=1;
)sql";

int64_t countRows(const std::string& db_path, const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* stmt = nullptr;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW)
        n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return n;
}

}  // namespace

class TestRunStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void createsSchemaAndListsNewestFirst() {
        QTemporaryDir dir;
        RunStore store(dir.path().toStdString());
        QCOMPARE(store.schemaVersion(), 3);
        store.createRun(record("aaa", "first"));
        store.createRun(record("bbb", "second"));
        auto runs = store.listRuns();
        QCOMPARE(runs.size(), size_t(2));
        QCOMPARE(runs[0].run_id, std::string("bbb"));
        QCOMPARE(runs[0].status, std::string("running"));
    }

    void migratesAVersion1StoreKeepingEveryRow() {
        QTemporaryDir dir;
        const std::string db_path = dir.path().toStdString() + "/runs.db";
        {
            sqlite3* db = nullptr;
            QCOMPARE(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
            char* error = nullptr;
            const int rc = sqlite3_exec(db, kVersion1Store, nullptr, nullptr, &error);
            QVERIFY2(rc == SQLITE_OK, error);
            sqlite3_close(db);
        }
        {
            RunStore store(dir.path().toStdString());
            QCOMPARE(store.schemaVersion(), 3);
            auto old = store.findRun("old1");
            QVERIFY(old.has_value());
            QCOMPARE(old->status, std::string("completed"));
            QCOMPARE(old->steps, int64_t(3));
            QCOMPARE(*old->final_loss, 1.25);
            QCOMPARE(old->tags, std::string("base"));
            QCOMPARE(old->config_json, std::string("{\"a\":1}"));
            QVERIFY(old->summary_json.empty());
            auto loss = store.metrics("old1", "train/loss");
            QCOMPARE(loss.size(), size_t(3));
            QCOMPARE(loss[1].tokens, int64_t(128));
            QCOMPARE(loss[2].value, 1.25);
            QCOMPARE(store.events("old1").size(), size_t(1));
            // The new column works for new and migrated runs alike.
            store.createRun(record("new1", "after the upgrade"));
            store.finishRun("new1", "completed", 1, 0.5, "", R"({"steps":1})");
            QCOMPARE(store.findRun("new1")->summary_json, std::string(R"({"steps":1})"));
            QCOMPARE(store.listRuns().front().run_id, std::string("new1"));
        }
        QCOMPARE(countRows(db_path, "PRAGMA user_version"), int64_t(3));
        QCOMPARE(countRows(db_path, "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name IN "
                                    "('runs_by_created','checkpoints_by_run','metrics_curve','metrics_by_run')"),
                 int64_t(4));
        QCOMPARE(countRows(db_path, "SELECT COUNT(*) FROM checkpoints WHERE run='old1'"), int64_t(1));
        // Opening again is a no-op: nothing is migrated twice.
        RunStore again(dir.path().toStdString());
        QCOMPARE(again.schemaVersion(), 3);
        QCOMPARE(again.listRuns().size(), size_t(2));
    }

    void metricsAfterReadsOnlyWhatWasCommittedSince() {
        QTemporaryDir dir;
        RunStore store(dir.path().toStdString());
        store.createRun(record("run", "followed"));
        store.createRun(record("other", "interleaved"));
        auto point = [](int64_t step, const char* key, double value) {
            return MetricPoint{step, step * 10, step * 0.5, key, value};
        };
        store.commitBatch("run", {point(1, "train/loss", 3.0), point(1, "train/lr", 1e-3)}, {});
        store.commitBatch("other", {point(1, "train/loss", 9.0)}, {});
        int64_t row = 0;
        auto first = store.metricsAfter("run", 0, &row);
        QCOMPARE(first.size(), size_t(2));
        QCOMPARE(first[0].key, std::string("train/loss"));
        QCOMPARE(first[1].key, std::string("train/lr"));
        QVERIFY(row > 0);
        // Nothing new: nothing read, and the position stays.
        int64_t same = -1;
        QVERIFY(store.metricsAfter("run", row, &same).empty());
        QCOMPARE(same, row);
        // Another run's rows in between are not this run's; a second sample at a step already
        // read is new.
        store.commitBatch("other", {point(2, "train/loss", 8.0)}, {});
        store.commitBatch("run", {point(1, "memory/cpu0/allocated", 5.0), point(2, "train/loss", 2.5)}, {});
        int64_t next = 0;
        auto fresh = store.metricsAfter("run", row, &next);
        QCOMPARE(fresh.size(), size_t(2));
        QCOMPARE(fresh[0].key, std::string("memory/cpu0/allocated"));
        QCOMPARE(fresh[0].step, int64_t(1));
        QCOMPARE(fresh[1].value, 2.5);
        QCOMPARE(fresh[1].tokens, int64_t(20));
        QVERIFY(next > row);
        // From the start, every point of the run in commit order.
        QCOMPARE(store.metricsAfter("run", 0, nullptr).size(), size_t(4));
        // One key after a step, by step.
        auto loss = store.metricsAfterStep("run", "train/loss", 1);
        QCOMPARE(loss.size(), size_t(1));
        QCOMPARE(loss[0].value, 2.5);
        QCOMPARE(store.metricsAfterStep("run", "train/loss", std::numeric_limits<int64_t>::min()).size(), size_t(2));
        QVERIFY(store.metricsAfterStep("run", "train/loss", 2).empty());
    }

    void aStoreFromANewerBuildIsRefused() {
        QTemporaryDir dir;
        const std::string db_path = dir.path().toStdString() + "/runs.db";
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
        sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        try {
            RunStore store(dir.path().toStdString());
            QFAIL("a store of schema version 99 was opened");
        } catch (const StoreError& e) {
            QVERIFY2(QString(e.what()).contains("schema version 99"), e.what());
        }
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

    // A long curve comes back whole: every point once, in step order, with its values, also
    // when reading from a step on, and the run's other keys stay out.
    void aLongCurveIsReadWholeAndInOrder() {
        QTemporaryDir dir;
        RunStore store(dir.path().toStdString());
        store.createRun(record("long", "long"));
        constexpr int64_t kSteps = 250'000;
        for (int64_t first = 1; first <= kSteps; first += 50'000) {
            std::vector<MetricPoint> points;
            for (int64_t s = first; s < first + 50'000; ++s) {
                points.push_back({s, s * 64, s * 0.5, "train/loss", 1.0 / double(s)});
                if (s % 1000 == 0) points.push_back({s, s * 64, s * 0.5, "eval/loss", 2.0});
            }
            store.commitBatch("long", points, {});
        }
        const auto loss = store.metrics("long", "train/loss");
        QCOMPARE(loss.size(), size_t(kSteps));
        for (int64_t i = 0; i < kSteps; ++i) {
            const MetricPoint& p = loss[size_t(i)];
            if (p.step != i + 1 || p.tokens != (i + 1) * 64 || p.value != 1.0 / double(i + 1) || p.key != "train/loss")
                QFAIL(qPrintable(QString("point %1 is step %2 value %3").arg(i).arg(p.step).arg(p.value)));
        }
        const auto tail = store.metricsAfterStep("long", "train/loss", 1'000);
        QCOMPARE(tail.size(), size_t(kSteps - 1'000));
        QCOMPARE(tail.front().step, int64_t(1'001));
        QCOMPARE(tail.back().step, kSteps);
        QCOMPARE(store.metrics("long", "eval/loss").size(), size_t(kSteps / 1000));
        QVERIFY(store.metricsAfterStep("long", "train/loss", kSteps).empty());
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
