// `trainbench-cli follow`: a run's stream while another process writes it, from a step, and when its writer dies.
#include <QtTest/QtTest>

#include <QProcess>
#include <QTemporaryDir>
#include <signal.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "cli_process.h"
#include "trainbench/run_store.h"
#include "trainbench/run_stream.h"

using namespace trainbench;

namespace {

// A run of tiny long enough (seq_len 256, one thread) that a follower joins while it trains.
QStringList slowRun(const QString& store, int steps) {
    return {"run",      kConfigs + "/tiny.json", "--store", store, "--set", "train.steps=" + QString::number(steps),
            "--set",    "train.seq_len=256",     "--set",   "runtime.threads=1"};
}

std::vector<RunStreamRecord> parseStream(const QByteArray& out) {
    RunStreamParser parser;
    auto records = parser.feed(out.constData(), size_t(out.size()));
    if (parser.pending() != 0) throw RunStreamError("the stream ends inside a line");
    return records;
}

std::vector<MetricPoint> pointsOf(const std::vector<RunStreamRecord>& records) {
    std::vector<MetricPoint> points;
    for (const auto& r : records)
        if (r.type == RunStreamRecordType::Points) points.insert(points.end(), r.points.begin(), r.points.end());
    return points;
}

// Points in one order (step, key) for comparing a stream with the store.
std::vector<MetricPoint> sorted(std::vector<MetricPoint> points) {
    std::stable_sort(points.begin(), points.end(), [](const MetricPoint& a, const MetricPoint& b) {
        return std::tie(a.step, a.key) < std::tie(b.step, b.key);
    });
    return points;
}

}  // namespace

class CliFollowTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aRunBeingWrittenArrivesWholeOnceInOrderThenItsEnd() {
        QTemporaryDir store;
        QProcess writer;
        writer.start(kCli, slowRun(store.path(), 30));
        QVERIFY(writer.waitForStarted());
        const std::string run_id = waitForRun(store.path(), "", 2, 60000);
        QVERIFY2(!run_id.empty(), "the run did not start in time");

        QProcess follower;
        follower.start(kCli, {"follow", QString::fromStdString(run_id), "--store", store.path(), "--json"});
        QVERIFY(follower.waitForStarted());
        QVERIFY(writer.waitForFinished(180000));
        QCOMPARE(writer.exitCode(), 0);
        QVERIFY2(follower.waitForFinished(30000), "follow did not end with the run");
        QCOMPARE(follower.exitCode(), 0);
        const auto records = parseStream(follower.readAllStandardOutput());

        QVERIFY(records.size() >= 5);
        QCOMPARE(int(records.front().type), int(RunStreamRecordType::Header));
        QCOMPARE(records.front().run_id, run_id);
        QCOMPARE(int(records[1].type), int(RunStreamRecordType::Run));
        QCOMPARE(records[1].run.status, std::string("running"));
        QCOMPARE(int(records.back().type), int(RunStreamRecordType::End));
        QCOMPARE(records.back().run.status, std::string("completed"));
        QCOMPARE(records.back().run.steps, int64_t(30));
        const auto live = std::find_if(records.begin(), records.end(),
                                       [](const RunStreamRecord& r) { return r.type == RunStreamRecordType::Live; });
        QVERIFY(live != records.end());
        // The follower joined mid-run: points came both before Live (stored) and after (live).
        QVERIFY(std::any_of(records.begin(), live, [](const auto& r) { return r.type == RunStreamRecordType::Points; }));
        QVERIFY(std::any_of(live, records.end(), [](const auto& r) { return r.type == RunStreamRecordType::Points; }));

        const std::vector<MetricPoint> streamed = pointsOf(records);
        // Each key's steps rise: in commit order, no step of a key twice.
        std::map<std::string, int64_t> last_step;
        for (const MetricPoint& p : streamed) {
            const auto seen = last_step.find(p.key);
            QVERIFY2(seen == last_step.end() || p.step > seen->second,
                     qPrintable(QString::fromStdString(p.key) + " step " + QString::number(p.step)));
            last_step[p.key] = p.step;
        }
        // Exactly the store's points, value for value.
        RunStore reader(store.path().toStdString());
        const auto stored = sorted(reader.metrics(run_id));
        const auto got = sorted(streamed);
        QCOMPARE(got.size(), stored.size());
        for (size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].step, stored[i].step);
            QCOMPARE(got[i].key, stored[i].key);
            QCOMPARE(got[i].tokens, stored[i].tokens);
            QCOMPARE(got[i].wall_time, stored[i].wall_time);
            if (std::isnan(stored[i].value)) QVERIFY(std::isnan(got[i].value));
            else QCOMPARE(got[i].value, stored[i].value);
        }
        QCOMPARE(last_step["train/loss"], int64_t(30));

        // --from-step: the steps from there on, and a count of the points left out.
        const Result from = runCli({"follow", QString::fromStdString(run_id), "--store", store.path(), "--from-step",
                                    "11", "--json"});
        QCOMPARE(from.code, 0);
        const auto tail = parseStream(from.out.toUtf8());
        const auto tail_points = pointsOf(tail);
        const auto before = std::count_if(stored.begin(), stored.end(), [](const MetricPoint& p) { return p.step < 11; });
        QCOMPARE(tail.front().from_step, int64_t(11));
        QCOMPARE(tail.front().points_before, int64_t(before));
        // The last point before step 11 in commit order: the store's last row of step 10 or before.
        QVERIFY(tail.front().last_before.has_value());
        QCOMPARE(tail.front().last_before->step, int64_t(10));
        const auto last_before = reader.lastPointBefore(run_id, 11);
        QCOMPARE(tail.front().last_before->key, last_before->key);
        QCOMPARE(tail.front().last_before->wall_time, last_before->wall_time);
        QCOMPARE(tail_points.size(), stored.size() - size_t(before));
        QVERIFY(std::all_of(tail_points.begin(), tail_points.end(), [](const MetricPoint& p) { return p.step >= 11; }));
        QCOMPARE(int(tail.back().type), int(RunStreamRecordType::End));

        // The same run as a person reads it.
        const Result text = runCli({"follow", QString::fromStdString(run_id), "--store", store.path(), "--from-step", "30"});
        QCOMPARE(text.code, 0);
        QVERIFY2(text.out.contains("\nstep 30  train/loss "), qPrintable(text.out));
        QVERIFY2(text.out.trimmed().endsWith("ended: completed after 30 steps"), qPrintable(text.out));
    }

    void aKilledWriterEndsTheStreamAsInterrupted() {
        QTemporaryDir store;
        QProcess writer;
        writer.start(kCli, slowRun(store.path(), 2000));
        QVERIFY(writer.waitForStarted());
        const std::string run_id = waitForRun(store.path(), "", 3, 60000);
        QVERIFY2(!run_id.empty(), "the run did not start in time");
        QProcess follower;
        follower.start(kCli, {"follow", QString::fromStdString(run_id), "--store", store.path(), "--json"});
        QVERIFY(follower.waitForStarted());
        QTest::qWait(500);
        ::kill(static_cast<pid_t>(writer.processId()), SIGKILL);
        writer.waitForFinished();
        QVERIFY2(follower.waitForFinished(30000), "follow did not notice the writer's death");
        QCOMPARE(follower.exitCode(), 0);
        const auto records = parseStream(follower.readAllStandardOutput());
        QCOMPARE(int(records.back().type), int(RunStreamRecordType::End));
        QCOMPARE(records.back().run.status, std::string("interrupted"));
    }

    void badArgumentsExitTwoNamingWhatIsWrong() {
        QTemporaryDir store;
        const Result missing = runCli({"follow", "no-such-run", "--store", store.path(), "--json"});
        QCOMPARE(missing.code, 2);
        QVERIFY2(missing.err.contains("run 'no-such-run' is not in the store"), qPrintable(missing.err));
        QVERIFY(missing.out.isEmpty());
        const Result negative = runCli({"follow", "x", "--store", store.path(), "--from-step", "-3"});
        QCOMPARE(negative.code, 2);
        QVERIFY2(negative.err.contains("--from-step"), qPrintable(negative.err));
    }
};

QTEST_GUILESS_MAIN(CliFollowTest)
#include "test_cli_follow.moc"
