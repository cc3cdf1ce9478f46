// TensorBoard out of a run, end to end: a tiny run with runtime.tensorboard_dir and its
// `export --format tensorboard` both read back by TensorBoard's own reader (tests/tools/tb_read.py
// in a test-only environment, tests/tools/setup-tensorboard-env.sh) and compared with
// `export --format jsonl` (every scalar's tag, step, float32 value and wall time), the stored
// config and the stored events; a run resumed from an earlier checkpoint shows each step once;
// and every refusal, by the name of its option or field.
#include <QtTest/QtTest>

#include "../reference_missing.h"

#include <QDateTime>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "cli_process.h"
#include "trainbench/run_store.h"

using namespace trainbench;

namespace {

QString sourcePath(const QString& relative) { return QStringLiteral(TRAINBENCH_SOURCE_DIR) + "/" + relative; }

// One scalar: step, value (float32, NaN for a non-finite one), seconds since the run started.
using Point = std::tuple<int64_t, float, double>;

}  // namespace

class TestCliTensorBoard : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString store_, run_id_, python_, site_, site_problem_;

    QJsonObject readEvents(const QString& path) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PYTHONPATH", site_);
        p.setProcessEnvironment(env);
        p.start(python_, {sourcePath("tests/tools/tb_read.py"), path});
        if (!p.waitForFinished(120000) || p.exitCode() != 0) {
            qWarning() << p.readAllStandardError().right(2000);
            return {};
        }
        return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    }

    // Everything TensorBoard read from `tb` against the store: the points as jsonl prints them,
    // the config and the events. `sessions`: how many processes wrote the run (a file each);
    // `live`: written by the recorder, whose files each begin with a session start record.
    void compareWithStore(const QJsonObject& tb, const QString& store_folder, const QString& run_id, bool live,
                          int sessions = 1) {
        QVERIFY2(!tb.isEmpty(), "tb_read.py read nothing");
        RunStore store(store_folder.toStdString());
        const auto run = store.findRun(run_id.toStdString());
        QVERIFY(run.has_value());
        // TensorBoard's wall times are Unix seconds: the run's creation time plus the point's own.
        const double created = double(QDateTime::fromString(QString::fromStdString(run->created), Qt::ISODate).toSecsSinceEpoch());
        QVERIFY(created > 1e9);

        const Result jsonl = runCli({"export", run_id, "--format", "jsonl", "--store", store_folder});
        QCOMPARE(jsonl.code, 0);
        std::map<QString, std::vector<Point>> expected;
        int points = 0;
        for (const QString& line : jsonl.out.split('\n', Qt::SkipEmptyParts)) {
            const QJsonObject p = QJsonDocument::fromJson(line.toUtf8()).object();
            const float value = p["value"].isNull() ? NAN : float(p["value"].toDouble());
            expected[p["key"].toString()].emplace_back(p["step"].toInteger(), value, p["wall_time"].toDouble());
            ++points;
        }
        QVERIFY(expected.count("train/loss") && expected["train/loss"].size() >= 5);
        const QJsonObject scalars = tb["scalars"].toObject();
        QCOMPARE(scalars.size(), int(expected.size()));
        for (auto& [key, want] : expected) {
            QVERIFY2(scalars.contains(key), qPrintable(key));
            std::vector<Point> got;
            for (const auto& e : scalars[key].toArray()) {
                const QJsonArray a = e.toArray();
                got.emplace_back(a[1].toInteger(), a[2].isNull() ? NAN : float(a[2].toDouble()), a[0].toDouble() - created);
            }
            auto order = [](const Point& a, const Point& b) { return a < b; };
            std::sort(want.begin(), want.end(), order);
            std::sort(got.begin(), got.end(), order);
            QCOMPARE(got.size(), want.size());
            for (size_t i = 0; i < want.size(); ++i) {
                QCOMPARE(std::get<0>(got[i]), std::get<0>(want[i]));
                const float g = std::get<1>(got[i]), w = std::get<1>(want[i]);
                QVERIFY2(g == w || (std::isnan(g) && std::isnan(w)),
                         qPrintable(QString("%1 step %2: %3 != %4").arg(key).arg(std::get<0>(want[i])).arg(g).arg(w)));
                QVERIFY2(std::abs(std::get<2>(got[i]) - std::get<2>(want[i])) < 1e-4,
                         qPrintable(QString("%1 step %2: wall %3 != %4").arg(key).arg(std::get<0>(want[i])).arg(std::get<2>(got[i])).arg(std::get<2>(want[i]))));
            }
        }

        const QJsonObject texts = tb["texts"].toObject();
        // Each session writes the config it ran with; the store keeps the last.
        const QJsonArray config = texts["config"].toArray();
        QCOMPARE(config.size(), sessions);
        QCOMPARE(config.last().toArray()[1].toInteger(), 0);
        QString shown = config.last().toArray()[2].toString();
        QVERIFY2(shown.startsWith("```json\n") && shown.endsWith("\n```"), qPrintable(shown.left(200)));
        shown = shown.mid(8, shown.size() - 12);
        QCOMPARE(QJsonDocument::fromJson(shown.toUtf8()), QJsonDocument::fromJson(QByteArray::fromStdString(run->config_json)));

        const auto events = store.events(run_id.toStdString());
        QVERIFY(events.size() >= 3);  // running, a checkpoint, completed
        int shown_events = 0;
        for (auto it = texts.begin(); it != texts.end(); ++it)
            if (it.key().startsWith("events/")) shown_events += it.value().toArray().size();
        QCOMPARE(shown_events, int(events.size()));
        for (const auto& event : events) {
            const QJsonArray list = texts["events/" + QString::fromStdString(event.kind)].toArray();
            const bool found = std::any_of(list.begin(), list.end(), [&](const QJsonValue& v) {
                const QJsonArray a = v.toArray();
                return a[1].toInteger() == event.step && a[2].toString() == QString::fromStdString(event.message) &&
                       std::abs(a[0].toDouble() - created - event.wall_time) < 1e-4;
            });
            QVERIFY2(found, qPrintable(QString::fromStdString(event.kind + " at step " + std::to_string(event.step) + ": " + event.message)));
        }
        QCOMPARE(tb["file_versions"].toArray().size(), sessions);
        for (const auto& version : tb["file_versions"].toArray()) QCOMPARE(version.toString(), QString("brain.Event:2"));
        // the version, the session's start (live), the config, every point and every event:
        // each record's CRCs checked
        if (sessions == 1) QCOMPARE(tb["records"].toInt(), 2 + (live ? 1 : 0) + points + int(events.size()));
    }

    QStringList filesIn(const QString& folder) { return QDir(folder).entryList(QDir::Files | QDir::Hidden); }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        store_ = dir_.filePath("store");
        python_ = QString::fromLocal8Bit(qgetenv("TRAINBENCH_TORCH_ENV"));
        if (python_.isEmpty()) python_ = QDir::homePath() + "/.cache/trainbench/torch-2.11.0";
        python_ += "/bin/python";
        QProcess setup;
        setup.start("bash", {sourcePath("tests/tools/setup-tensorboard-env.sh")});
        const bool ran = setup.waitForFinished(10 * 60 * 1000);
        const QStringList lines = QString::fromUtf8(setup.readAllStandardOutput()).trimmed().split('\n');
        site_ = lines.last();
        if (!ran || setup.exitCode() != 0 || !QFile::exists(python_))
            site_problem_ = "tests/tools/setup-tensorboard-env.sh failed (" +
                            QString::fromUtf8(setup.readAllStandardError()).trimmed().right(400) + ")";

        const Result r = runCli({"run", kConfigs + "/tiny.json", "--set", "train.steps=5", "--set",
                                 "runtime.tensorboard_dir=" + dir_.filePath("tb"), "--store", store_});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        run_id_ = lastJsonLine(r.out)["run_id"].toString();
        QVERIFY(!run_id_.isEmpty());
    }

    // The live file: one per run, in a folder named by the run id.
    void liveFileHasEveryPoint() {
        const QString folder = dir_.filePath("tb/" + run_id_);
        const QStringList files = filesIn(folder);
        QCOMPARE(files.size(), 1);
        QVERIFY2(files[0].startsWith("events.out.tfevents.") && files[0].endsWith(".trainbench"), qPrintable(files[0]));
        if (!site_problem_.isEmpty()) TRAINBENCH_REFERENCE_MISSING(qPrintable("no TensorBoard to read with: " + site_problem_));
        compareWithStore(readEvents(folder), store_, run_id_, /*live=*/true);
    }

    // The export: the path printed, one whole file in the folder (no partial left), the same content.
    void exportHasEveryPoint() {
        const QString out = dir_.filePath("export/" + run_id_);
        const Result r = runCli({"export", run_id_, "--format", "tensorboard", "--out", out, "--store", store_});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(filesIn(out).size(), 1);
        QCOMPARE(r.out.trimmed(), out + "/" + filesIn(out)[0]);
        QVERIFY(filesIn(out)[0].contains("tfevents"));
        if (!site_problem_.isEmpty()) TRAINBENCH_REFERENCE_MISSING(qPrintable("no TensorBoard to read with: " + site_problem_));
        compareWithStore(readEvents(out), store_, run_id_, /*live=*/false);
    }

    // A resume from an older checkpoint than the run reached (the newest is damaged, as after a
    // crash mid-write): the store drops steps 5 and 6 and the resumed session trains them again;
    // its file starts its session at step 5, so TensorBoard drops the first file's 5 and 6 too.
    void resumedRunShowsEachStepOnce() {
        if (!site_problem_.isEmpty()) TRAINBENCH_REFERENCE_MISSING(qPrintable("no TensorBoard to read with: " + site_problem_));
        const QString store = dir_.filePath("resume-store"), tb = dir_.filePath("resume-tb");
        const Result first = runCli({"run", kConfigs + "/tiny.json", "--set", "train.steps=6", "--set",
                                     "train.checkpoint_every=2", "--set", "runtime.tensorboard_dir=" + tb, "--store", store});
        QVERIFY2(first.code == 0, qPrintable(first.err));
        const QString id = lastJsonLine(first.out)["run_id"].toString();
        QFile weights(store + "/checkpoints/" + id + "/step-00000006/model.safetensors");
        QVERIFY(weights.open(QIODevice::ReadWrite));
        QVERIFY(weights.resize(weights.size() / 2));
        weights.close();
        QTest::qWait(1100);  // the second file's name (its creation second) sorts after the first's
        const Result resumed = runCli({"resume", id, "--store", store});
        QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
        QVERIFY2(resumed.err.contains("from step 4"), qPrintable(resumed.err));
        QCOMPARE(filesIn(tb + "/" + id).size(), 2);
        const QJsonObject read = readEvents(tb + "/" + id);
        // The first file holds steps 5 and 6 too: without the second session start they would show twice.
        QCOMPARE(read["scalars"].toObject()["train/loss"].toArray().size(), 6);
        compareWithStore(read, store, id, /*live=*/true, /*sessions=*/2);
    }

    void refusals() {
        const QString file = dir_.filePath("a-file");
        QVERIFY(QFile(file).open(QIODevice::WriteOnly));
        auto refused = [](const Result& r, const QString& name) {
            QVERIFY2(r.code == 2, qPrintable(QString::number(r.code) + ": " + r.err));
            QVERIFY2(r.err.contains(name), qPrintable(r.err));
        };
        refused(runCli({"export", run_id_, "--format", "tensorboard", "--store", store_}), "--out");
        refused(runCli({"export", run_id_, "--format", "jsonl", "--out", dir_.filePath("x"), "--store", store_}), "--out");
        refused(runCli({"export", run_id_, "--format", "csv", "--out", dir_.filePath("x"), "--store", store_}), "--out");
        refused(runCli({"export", run_id_, "--format", "tensorboard", "--out", file, "--store", store_}), "--out: " + file);
        refused(runCli({"export", run_id_, "--format", "tensorboard", "--out", file + "/tb", "--store", store_}), "--out");
        QVERIFY(!QFileInfo::exists(dir_.filePath("x")));

        // A field that can never be a folder, and one that cannot be made: refused before the
        // run is registered.
        const QString empty_store = dir_.filePath("empty-store");
        for (const QString& bad : {file, file + "/tb", QString("/proc/trainbench-tensorboard")}) {
            refused(runCli({"run", kConfigs + "/tiny.json", "--set", "train.steps=1", "--set",
                            "runtime.tensorboard_dir=" + bad, "--store", empty_store}),
                    "runtime.tensorboard_dir (\"" + bad + "\")");
            const Result runs = runCli({"runs", "--json", "--store", empty_store});
            QCOMPARE(runs.code, 0);
            QCOMPARE(QJsonDocument::fromJson(runs.out.toUtf8()).array().size(), 0);
        }
    }
};

QTEST_GUILESS_MAIN(TestCliTensorBoard)
#include "test_cli_tensorboard.moc"
