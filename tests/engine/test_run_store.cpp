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

void execSql(const std::string& db_path, const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open(db_path.c_str(), &db);
    sqlite3_busy_timeout(db, 10000);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    const std::string message = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    QVERIFY2(rc == SQLITE_OK, message.c_str());
}

// The points of one key after a step straight from the metrics rows, by step and then commit
// order: the reference a curve read through the chunks must equal.
std::vector<MetricPoint> rowsOf(const std::string& db_path, const std::string& run, const std::string& key,
                                int64_t after_step) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT step, tokens, wall_time, value FROM metrics WHERE run=?1 AND key=?2 AND step>?3 "
                       "ORDER BY step, rowid",
                       -1, &stmt, nullptr);
    sqlite3_bind_text(stmt, 1, run.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(stmt, 3, after_step);
    std::vector<MetricPoint> out;
    while (sqlite3_step(stmt) == SQLITE_ROW)
        out.push_back({sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1), sqlite3_column_double(stmt, 2), key,
                       sqlite3_column_type(stmt, 3) == SQLITE_NULL ? std::nan("") : sqlite3_column_double(stmt, 3)});
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
}

// Empty when `got` equals the rows of the key after each of `after_steps`; else the first
// difference.
QString differenceFromRows(RunStore& store, const std::string& run, const std::string& key,
                           std::initializer_list<int64_t> after_steps) {
    for (int64_t after : after_steps) {
        const auto expected = rowsOf(store.path(), run, key, after);
        const auto got = store.metricsAfterStep(run, key, after);
        if (got.size() != expected.size())
            return QString("%1 after %2: %3 points, the rows have %4")
                .arg(key.c_str()).arg(after).arg(got.size()).arg(expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
            const MetricPoint& a = got[i];
            const MetricPoint& b = expected[i];
            const bool same_value = (a.value == b.value && std::signbit(a.value) == std::signbit(b.value)) ||
                                    (std::isnan(a.value) && std::isnan(b.value));
            if (a.step != b.step || a.tokens != b.tokens || a.wall_time != b.wall_time || !same_value || a.key != key)
                return QString("%1 after %2: point %3 is step %4 value %5, the row is step %6 value %7")
                    .arg(key.c_str()).arg(after).arg(i).arg(a.step).arg(a.value).arg(b.step).arg(b.value);
        }
    }
    return {};
}

}  // namespace

class TestRunStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void createsSchemaAndListsNewestFirst() {
        QTemporaryDir dir;
        RunStore store(dir.path().toStdString());
        QCOMPARE(store.schemaVersion(), 4);
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
            QCOMPARE(store.schemaVersion(), 4);
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
        QCOMPARE(countRows(db_path, "PRAGMA user_version"), int64_t(4));
        QCOMPARE(countRows(db_path, "SELECT COUNT(*) FROM sqlite_master WHERE name='metric_chunks'"), int64_t(1));
        QCOMPARE(countRows(db_path, "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name IN "
                                    "('runs_by_created','checkpoints_by_run','metrics_curve','metrics_by_run')"),
                 int64_t(4));
        QCOMPARE(countRows(db_path, "SELECT COUNT(*) FROM checkpoints WHERE run='old1'"), int64_t(1));
        // Opening again is a no-op: nothing is migrated twice.
        RunStore again(dir.path().toStdString());
        QCOMPARE(again.schemaVersion(), 4);
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

    // A curve is read from its chunks (1,024 points to a blob) and then the rows after them, and
    // comes back as the rows are, also after what breaks a chunk: a late point inside one, a
    // resume that drops the points after its checkpoint, a chunk gone or damaged.
    void curvesReadThroughChunksEqualTheRows() {
        QTemporaryDir dir;
        RunStore store(dir.path().toStdString());
        const std::string db = store.path();
        store.createRun(record("c", "chunked"));
        store.createRun(record("other", "interleaved"));
        // 5,000 steps in batches of 7, a sparse key beside, non-finite values on the way.
        for (int64_t first = 1; first <= 5000; first += 7) {
            std::vector<MetricPoint> points;
            for (int64_t s = first; s < first + 7 && s <= 5000; ++s) {
                const double loss = s % 997 == 0 ? INFINITY : s % 331 == 0 ? NAN : s % 499 == 0 ? -0.0 : 10.0 / double(s);
                points.push_back({s, s * 64, s * 0.25, "train/loss", loss});
                if (s % 10 == 0) points.push_back({s, s * 64, s * 0.25, "eval/loss", 1.0 + 1.0 / double(s)});
            }
            store.commitBatch("c", points, {});
            store.commitBatch("other", {{first, first, 0.0, "train/loss", 1.0}}, {});
        }
        // Hand count: a chunk seals once 1,024 points and a later one wait, so 5,000 points make
        // 4 chunks (4,096 points) and leave 904 in rows only; 500 eval points make none.
        QCOMPARE(countRows(db, "SELECT COUNT(*) FROM metric_chunks WHERE run='c' AND key='train/loss'"), int64_t(4));
        QCOMPARE(countRows(db, "SELECT SUM(points) FROM metric_chunks WHERE run='c' AND key='train/loss'"),
                 int64_t(4096));
        QCOMPARE(countRows(db, "SELECT COUNT(*) FROM metric_chunks WHERE run='c' AND key='eval/loss'"), int64_t(0));
        QCOMPARE(countRows(db, "SELECT MAX(last_step) FROM metric_chunks WHERE run='c'"), int64_t(4096));
        const auto all = {std::numeric_limits<int64_t>::min(), int64_t(0), int64_t(1023), int64_t(1024),
                          int64_t(1500), int64_t(4096), int64_t(4999), int64_t(5000)};
        QCOMPARE(differenceFromRows(store, "c", "train/loss", all), QString());
        QCOMPARE(differenceFromRows(store, "c", "eval/loss", all), QString());
        QCOMPARE(differenceFromRows(store, "other", "train/loss", all), QString());
        // The keys of a run, found by a seek from each to the next: only its own, in order.
        QCOMPARE(store.metricKeys("c"), (std::vector<std::string>{"eval/loss", "train/loss"}));
        QCOMPARE(store.metricKeys("other"), (std::vector<std::string>{"train/loss"}));
        QVERIFY(store.metricKeys("nobody").empty());
        QVERIFY(std::isnan(store.metrics("c", "train/loss")[996].value));  // infinite: stored as no value

        // The reads do come from the chunks: a blob of the right size zeroed (every point step 0,
        // so none after step 1,024) hides steps 1,025-2,048 although their rows are there.
        execSql(db, "UPDATE metric_chunks SET data = zeroblob(32 * 1024) WHERE run='c' AND key='train/loss' "
                    "AND last_step=2048");
        QCOMPARE(store.metricsAfterStep("c", "train/loss", 1024).front().step, int64_t(2049));
        execSql(db, "DELETE FROM metric_chunks WHERE run='c' AND last_step=2048");
        // A gap in the chain: the rows from the gap on.
        QCOMPARE(differenceFromRows(store, "c", "train/loss", all), QString());

        // A late point inside the first chunk (a second sample of step 600): the chunks from
        // there on are dropped and sealed again from the rows, the late point in place.
        store.commitBatch("c", {{600, 1, 2.0, "train/loss", -1.0}, {5001, 5001 * 64, 5001 * 0.25, "train/loss", 0.5}}, {});
        QCOMPARE(countRows(db, "SELECT MIN(covers_after) > -1 FROM metric_chunks WHERE run='c' AND key='train/loss'"),
                 int64_t(0));  // the chain starts at the beginning again
        QCOMPARE(countRows(db, "SELECT SUM(points) FROM metric_chunks WHERE run='c' AND key='train/loss'"),
                 int64_t(4 * 1024));
        QCOMPARE(differenceFromRows(store, "c", "train/loss", all), QString());
        const auto around = store.metricsAfterStep("c", "train/loss", 599);
        QCOMPARE(around[1].step, int64_t(600));
        QCOMPARE(around[1].value, -1.0);  // the second sample after the first, as committed

        // A damaged blob (wrong size): read from the rows.
        execSql(db, "UPDATE metric_chunks SET data = x'00' WHERE run='c' AND key='train/loss' AND covers_after > 0 "
                    "AND covers_after < 2000");
        QCOMPARE(differenceFromRows(store, "c", "train/loss", all), QString());

        // A resume from step 2,600 by another process: its chunks continue the chain.
        {
            RunStore resumed(dir.path().toStdString());
            resumed.reopenRun("c", 2600);
            QCOMPARE(countRows(db, "SELECT COUNT(*) FROM metric_chunks WHERE run='c' AND last_step > 2600"), int64_t(0));
            for (int64_t first = 2601; first <= 7000; first += 100) {
                std::vector<MetricPoint> points;
                for (int64_t s = first; s < first + 100; ++s) points.push_back({s, s * 64, s * 0.25, "train/loss", 3.0});
                resumed.commitBatch("c", points, {});
            }
        }
        QVERIFY(countRows(db, "SELECT MAX(last_step) FROM metric_chunks WHERE run='c' AND key='train/loss'") > 6000);
        QCOMPARE(differenceFromRows(store, "c", "train/loss", all), QString());
        QCOMPARE(differenceFromRows(store, "c", "eval/loss", all), QString());
        QCOMPARE(store.metrics("c", "train/loss").size(), size_t(7001));  // 1..7000 and the second step 600
    }

    // Two writers of one run taking turns (a recorder and its writer thread, say), each turn
    // shorter than a chunk: neither seals a chunk without the other's rows in it.
    void twoWritersOfOneRunKeepTheChainWhole() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        RunStore a(folder);
        RunStore b(folder);
        a.createRun(record("shared", "two writers"));
        int64_t step = 1;
        for (int turn = 0; turn < 10; ++turn) {
            RunStore& writer = turn % 2 == 0 ? a : b;
            for (int batch = 0; batch < 3; ++batch) {
                std::vector<MetricPoint> points;
                for (int i = 0; i < 100; ++i, ++step) points.push_back({step, step, 0.0, "train/loss", double(step)});
                writer.commitBatch("shared", points, {});
            }
        }
        // Hand count: 3,000 points; a chunk seals once more than 1,024 wait, so 2 chunks.
        QCOMPARE(countRows(a.path(), "SELECT SUM(points) FROM metric_chunks WHERE run='shared'"), int64_t(2 * 1024));
        QCOMPARE(differenceFromRows(a, "shared", "train/loss", {std::numeric_limits<int64_t>::min(), int64_t(1500)}),
                 QString());
    }

    // A key whose step does not advance never fills a chunk that can end: past 65,536 waiting
    // points the writer stops chunking it (rows only), and the curve still reads whole.
    void aStepThatNeverAdvancesIsReadFromTheRows() {
        QTemporaryDir dir;
        RunStore store(dir.path().toStdString());
        store.createRun(record("held", "held"));
        for (int batch = 0; batch < 70; ++batch) {
            std::vector<MetricPoint> points;
            for (int i = 0; i < 1000; ++i) points.push_back({7, 7, 0.1 * batch, "mem/cpu0/allocated_bytes", double(i)});
            points.push_back({7 + batch, 7, 0.0, "train/loss", 1.0});
            store.commitBatch("held", points, {});
        }
        std::vector<MetricPoint> later;
        for (int64_t s = 8; s <= 3000; ++s) later.push_back({s, s, 0.0, "mem/cpu0/allocated_bytes", double(s)});
        store.commitBatch("held", later, {});
        QCOMPARE(countRows(store.path(), "SELECT COUNT(*) FROM metric_chunks WHERE key='mem/cpu0/allocated_bytes'"),
                 int64_t(0));
        QCOMPARE(differenceFromRows(store, "held", "mem/cpu0/allocated_bytes",
                                    {std::numeric_limits<int64_t>::min(), int64_t(7), int64_t(2000)}),
                 QString());
        QCOMPARE(store.metrics("held", "mem/cpu0/allocated_bytes").size(), size_t(70'000 + 2'993));
        QCOMPARE(differenceFromRows(store, "held", "train/loss", {std::numeric_limits<int64_t>::min()}), QString());
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

    // A copy of another store's run (the workbench's copy of a remote run): its status is the
    // other store's, whoever opens this one; its points can be cut back to a step and sent again.
    void aMirroredRunKeepsItsStatusAndIsCutBackByStep() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        RunRecord far = record("far", "remote");
        far.status = "running";
        far.created = "2026-12-07T10:00:00Z";
        far.tags = "a,b";
        far.steps = 7;
        {
            RunStore copy(folder);
            copy.mirrorRun(far);
            copy.appendMetrics("far", lossPoints(1, 2000));  // chunks sealed: 1,024 points each
            copy.appendEvents("far", {{1500, 1.0, "checkpoint", "/elsewhere/step-1500"}, {10, 0.1, "advice", "x"}});
        }
        RunStore copy(folder);  // opening again: no owner here, so not interrupted
        QCOMPARE(copy.findRun("far")->status, std::string("running"));
        QCOMPARE(copy.findRun("far")->tags, std::string("a,b"));
        QCOMPARE(copy.lastStep("far"), int64_t(2000));
        QCOMPARE(copy.pointCountBefore("far", 1500), int64_t(1499));
        QCOMPARE(copy.lastPointBefore("far", 1500)->step, int64_t(1499));
        QCOMPARE(copy.lastPointBefore("far", 1500)->value, 5.0 / 1499.0);
        QVERIFY(!copy.lastPointBefore("far", 1).has_value());
        copy.removeFromStep("far", 1500);
        QCOMPARE(copy.lastStep("far"), int64_t(1499));
        QCOMPARE(copy.events("far").size(), size_t(1));
        QVERIFY(copy.checkpoints("far").empty());
        // Read through the chunks and the rows alike: 1..1499, then what is sent again.
        copy.appendMetrics("far", lossPoints(1500, 1600));
        const auto curve = copy.metrics("far", "train/loss");
        QCOMPARE(curve.size(), size_t(1600));
        for (size_t i = 0; i < curve.size(); ++i) QCOMPARE(curve[i].step, int64_t(i + 1));
        // The end as the other store says it; a second mirror updates in place.
        far.status = "completed";
        far.final_loss = 1.25;
        far.finished = "2026-12-07T11:00:00Z";
        copy.mirrorRun(far);
        QCOMPARE(copy.listRuns().size(), size_t(1));
        QCOMPARE(copy.findRun("far")->status, std::string("completed"));
        QCOMPARE(*copy.findRun("far")->final_loss, 1.25);
        QCOMPARE(copy.lastStep("nobody"), int64_t(0));
    }
};

QTEST_APPLESS_MAIN(TestRunStore)
#include "test_run_store.moc"
