// Tests a store on another machine read over ssh: locations and quoting, the listing, a run watched live across a
// dropped connection, its copy reopened, remote and local runs compared, and what ssh or the host refuses. The
// "host" is this machine: a stand-in for ssh (ssh_stand_in.sh, through TRAINBENCH_SSH) runs the real trainbench-cli
// follow and runs --json here; the test itself writes the "remote" store as a training process would.
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QLineEdit>
#include <QPushButton>
#include <QScopeGuard>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include "app/main_window.h"
#include "app/remote_store_dialog.h"
#include "compare/compare_runs.h"
#include "monitor/metric_plots.h"
#include "runs/remote_feed.h"
#include "runs/remote_location.h"
#include "runs/remote_runs_lister.h"
#include "runs/remote_run_sync.h"
#include "runs/run_ref.h"
#include "runs/runs_model.h"
#include "runs/runs_panel.h"
#include "tiny_gui_config.h"
#include "trainbench/config_io.h"
#include "trainbench/run_store.h"
#include "widget_lookup.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int kTimeoutMs = 60000;

double lossAt(int64_t step) { return 5.0 / std::sqrt(static_cast<double>(step)); }

// One step as a training process commits it: loss, learning rate, tokens.
std::vector<MetricPoint> stepPoints(int64_t step) {
    std::vector<MetricPoint> points;
    for (const char* key : {"train/loss", "train/lr", "train/tokens"}) {
        MetricPoint point{step, step * 32, 0.05 * double(step), key, 0.0};
        point.value = point.key == "train/loss" ? lossAt(step) : point.key == "train/lr" ? 3e-4 : double(step * 32);
        points.push_back(point);
    }
    return points;
}

// A store written as a training process writes it (this process stands in for it).
struct Writer {
    explicit Writer(const QString& folder) : store(folder.toStdString()) {}
    void create(const std::string& id, const std::string& name, int64_t steps) {
        RunRecord run;
        run.run_id = id;
        run.name = name;
        run.config_json = runConfigToJson(tinyGuiConfig(steps));
        store.createRun(run);
    }
    void write(const std::string& id, int64_t first, int64_t last) {
        for (int64_t step = first; step <= last; ++step) store.commitBatch(id, stepPoints(step), {});
    }
    void finish(const std::string& id, int64_t steps) { store.finishRun(id, "completed", steps, lossAt(steps), ""); }
    RunStore store;
};

// The steps of train/loss a feed delivered, each with how often it came, its value checked.
struct LossSteps {
    std::map<int64_t, int> seen;
    bool values_right = true;
    void take(const QVector<MetricPoint>& points) {
        for (const MetricPoint& p : points) {
            if (p.key != "train/loss") continue;
            ++seen[p.step];
            values_right = values_right && p.value == lossAt(p.step);
        }
    }
    // What differs from 1..last each once, for a failure's message.
    QString differences(int64_t last) const {
        QStringList wrong;
        for (int64_t step = 1; step <= last; ++step) {
            const auto it = seen.find(step);
            const int count = it == seen.end() ? 0 : it->second;
            if (count != 1) wrong << QStringLiteral("step %1 x%2").arg(step).arg(count);
        }
        for (const auto& [step, count] : seen)
            if (step < 1 || step > last) wrong << QStringLiteral("step %1 x%2").arg(step).arg(count);
        return wrong.join(QStringLiteral(", "));
    }
    // 1..last, each once.
    bool exactlyOnce(int64_t last) const {
        if (int64_t(seen.size()) != last) return false;
        for (const auto& [step, count] : seen)
            if (count != 1 || step < 1 || step > last) return false;
        return true;
    }
};

}  // namespace

class TestRemoteStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        qRegisterMetaType<RunRecord>();
        qRegisterMetaType<RemoteRunSync::State>();
        qRegisterMetaType<std::vector<RunRecord>>();
        qputenv("TRAINBENCH_SSH", QByteArray(STAND_IN_SSH));
        QVERIFY(cache_.isValid());
        qputenv("TRAINBENCH_REMOTE_CACHE", cache_.path().toLocal8Bit());
    }

    void init() {
        remote_ = std::make_unique<QTemporaryDir>();
        local_ = std::make_unique<QTemporaryDir>();
        qputenv("TRAINBENCH_STORE", local_->path().toLocal8Bit());
        qunsetenv("STAND_IN_SSH_REFUSE");
        qunsetenv("STAND_IN_SSH_SLOW");
    }

    void locationsParseAndHostileOnesAreRefused() {
        QString why;
        auto full = RemoteLocation::parse(QStringLiteral(" me@gpu-node:2222:/scratch/my store "), &why);
        QVERIFY2(full, qPrintable(why));
        QCOMPARE(full->user, QStringLiteral("me"));
        QCOMPARE(full->host, QStringLiteral("gpu-node"));
        QCOMPARE(full->port, 2222);
        QCOMPARE(full->path, QStringLiteral("/scratch/my store"));
        QCOMPARE(full->label(), QStringLiteral("me@gpu-node:2222:/scratch/my store"));
        QCOMPARE(full->hostLabel(), QStringLiteral("me@gpu-node"));
        const QStringList args = full->sshArguments({QStringLiteral("runs"), QStringLiteral("--json")});
        QVERIFY(args.contains(QStringLiteral("BatchMode=yes")));
        QCOMPARE(args.mid(args.indexOf(QStringLiteral("-p")), 2), (QStringList{"-p", "2222"}));
        QCOMPARE(args.mid(args.indexOf(QStringLiteral("-l")), 2), (QStringList{"-l", "me"}));
        QCOMPARE(args.mid(args.size() - 3),
                 (QStringList{"--", "gpu-node", "'trainbench-cli' 'runs' '--json'"}));
        auto relative = RemoteLocation::parse(QStringLiteral("gpu-node:runs"), &why);
        QVERIFY(relative && relative->port == 0 && relative->path == QStringLiteral("runs"));
        QCOMPARE(shellQuoted(QStringLiteral("~/runs/it's")), QStringLiteral("~/'runs/it'\\''s'"));
        // Different stores, different copies.
        QVERIFY(full->cacheFolder() != relative->cacheFolder());
        QVERIFY(full->cacheFolder().startsWith(cache_.path()));

        for (const QString& bad : {QStringLiteral("-oProxyCommand=touch_x:/p"), QStringLiteral("gpu node:/p"),
                                   QStringLiteral("gpu-node:"), QStringLiteral("gpu-node:-rf"),
                                   QStringLiteral("gpu-node:/a\nb"), QStringLiteral("gpu-node:70000:/p"),
                                   QStringLiteral("gpu-node"), QStringLiteral("-l@gpu-node:/p"),
                                   QStringLiteral("gpu;reboot:/p")}) {
            QString reason;
            QVERIFY2(!RemoteLocation::parse(bad, &reason), qPrintable(bad));
            QVERIFY2(!reason.isEmpty(), qPrintable(bad));
        }
        QVERIFY(!RemoteLocation::parse(QStringLiteral("gpu-node:/a\\'b"), nullptr));  // a backslash: fish reads it
        QVERIFY(!RemoteLocation::runIdProblem(QStringLiteral("-rf")).isEmpty());
        QVERIFY(!RemoteLocation::runIdProblem(QStringLiteral("x';rm -rf ~;'")).isEmpty());
        QVERIFY(!RemoteLocation::runIdProblem(QStringLiteral("a#b")).isEmpty());
        // A listing with an id the engine could not have written is refused whole.
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, RemoteRunsLister::parseListing(
                                     R"([{"run_id":"ab12","name":"ok"},{"run_id":"x';touch PWNED;'","name":"evil"}])"));
        QCOMPARE(RemoteRunsLister::parseListing(R"([{"run_id":"ab12","name":"ok","status":"running","steps":3}])")
                     .front()
                     .steps,
                 int64_t(3));
        QVERIFY(!RemoteLocation::runIdProblem(QStringLiteral("a\x01z")).isEmpty());
        QVERIFY(!RemoteLocation::runIdProblem(QString()).isEmpty());
        QVERIFY(RemoteLocation::runIdProblem(QStringLiteral("20261207-ab12")).isEmpty());
        RemoteLocation cli_as_option = *relative;
        cli_as_option.cli = QStringLiteral("--help");
        QVERIFY(!cli_as_option.problem().isEmpty());
    }

    // Each word reaches the program on the "host" as it was, whatever a shell would make of it.
    void hostileWordsReachTheRemoteProgramUnchanged() {
        QTemporaryDir work;
        RemoteLocation location = *RemoteLocation::parse(QStringLiteral("gpu-node:/tmp"), nullptr);
        location.cli = QStringLiteral("printf");
        const QStringList words{QStringLiteral("a'b"), QStringLiteral("$(touch PWNED)"), QStringLiteral("; touch PWNED"),
                                QStringLiteral("`touch PWNED`"), QStringLiteral("\"q\" \\ "), QStringLiteral("*"),
                                QStringLiteral("ü  spaced")};
        QProcess ssh;
        ssh.setWorkingDirectory(work.path());
        ssh.start(RemoteLocation::sshProgram(), location.sshArguments(QStringList{QStringLiteral("%s|")} + words));
        QVERIFY(ssh.waitForFinished(10000));
        QCOMPARE(ssh.exitCode(), 0);
        QCOMPARE(QString::fromUtf8(ssh.readAllStandardOutput()), words.join(QLatin1Char('|')) + QLatin1Char('|'));
        QVERIFY(!QFile::exists(work.filePath(QStringLiteral("PWNED"))));
    }

    void aRemoteRunIsListedWatchedLiveAcrossADropAndReopenedFromItsCopy() {
        Writer writer(remote_->path());
        writer.create("far-run", "far", 60);
        writer.write("far-run", 1, 10);
        const RemoteLocation location = hostLocation();

        // Listed beside the local runs, marked with its host.
        RunsPanel panel(local_->path());
        QSignalSpy listed(&panel, &RunsPanel::remoteListed);
        panel.addRemote(location);
        QVERIFY(listed.wait(kTimeoutMs));
        QCOMPARE(listed.at(0).at(1).toString(), QString());
        const QString key = runRefKey(location, QStringLiteral("far-run"));
        const int row = panel.model()->rowOf(key);
        QVERIFY(row >= 0);
        QCOMPARE(panel.model()->index(row, RunsModel::Name).data().toString(), QStringLiteral("far"));
        QCOMPARE(panel.model()->index(row, RunsModel::Host).data().toString(), QStringLiteral("gpu-node"));
        QCOMPARE(panel.model()->index(row, RunsModel::Status).data().toString(), QStringLiteral("running"));

        // Watched live: the writer goes on, the connection is cut once mid-run.
        RemoteFeed feed(location, QStringLiteral("far-run"));
        feed.sync()->setRetryDelays(100, 400);
        LossSteps steps;
        QString finished_status;
        std::vector<RemoteRunSync::State> states;
        connect(&feed, &RunFeed::pointsArrived, this, [&](const QVector<MetricPoint>& points) { steps.take(points); });
        connect(&feed, &RunFeed::runFinished, this, [&](const RunSummary&, const QString& status) { finished_status = status; });
        connect(feed.sync(), &RemoteRunSync::stateChanged, this,
                [&](RemoteRunSync::State state, const QString&) { states.push_back(state); });
        feed.start();
        QTRY_VERIFY_WITH_TIMEOUT(steps.seen.size() >= 10, kTimeoutMs);
        bool dropped = false;
        for (int64_t step = 11; step <= 60; ++step) {
            writer.write("far-run", step, step);
            QTest::qWait(20);
            if (step == 30) {
                QTRY_VERIFY_WITH_TIMEOUT(steps.seen.size() >= 25, kTimeoutMs);
                feed.sync()->dropConnection();
                dropped = true;
            }
            if (step == 55) {
                // Down again, for longer: the run ends while no connection is up, and the next
                // connection brings the rest a line at a time (the run's record, saying it has
                // ended, well before its last points).
                QTRY_VERIFY_WITH_TIMEOUT(steps.seen.size() >= 50, kTimeoutMs);
                qputenv("STAND_IN_SSH_SLOW", "1");
                feed.sync()->setRetryDelays(3000, 3000);
                feed.sync()->dropConnection();
                QTRY_COMPARE_WITH_TIMEOUT(feed.sync()->state(), RemoteRunSync::State::Reconnecting, kTimeoutMs);
            }
        }
        QVERIFY(dropped);
        writer.finish("far-run", 60);
        QCOMPARE(feed.sync()->state(), RemoteRunSync::State::Reconnecting);
        QVERIFY(finished_status.isEmpty());
        QTRY_COMPARE_WITH_TIMEOUT(finished_status, QStringLiteral("completed"), kTimeoutMs);
        QVERIFY2(steps.exactlyOnce(60), qPrintable(steps.differences(60)));
        QVERIFY(steps.values_right);
        QVERIFY(feed.sync()->connections() >= 2);
        QVERIFY(std::find(states.begin(), states.end(), RemoteRunSync::State::Reconnecting) != states.end());
        QCOMPARE(feed.sync()->state(), RemoteRunSync::State::Ended);
        {
            RunStore copy(location.cacheFolder().toStdString());
            QCOMPARE(copy.metrics("far-run", "train/loss").size(), size_t(60));
            QCOMPARE(copy.findRun("far-run")->status, std::string("completed"));
        }

        // Reopened once closed: the copy is read at once; only the last step crosses the network again.
        feed.stop();
        QTest::qWait(50);  // the released sync is deleted once back in the event loop
        RemoteFeed again(location, QStringLiteral("far-run"));
        LossSteps steps_again;
        connect(&again, &RunFeed::pointsArrived, this, [&](const QVector<MetricPoint>& points) { steps_again.take(points); });
        again.start();
        QTRY_COMPARE_WITH_TIMEOUT(again.sync()->state(), RemoteRunSync::State::Ended, kTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(steps_again.exactlyOnce(60), kTimeoutMs);
        QCOMPARE(again.sync()->fromStep(), int64_t(60));
    }

    void remoteAndLocalRunsAreComparedTogether() {
        Writer local(local_->path());
        local.create("near-run", "near", 20);
        local.write("near-run", 1, 20);
        local.finish("near-run", 20);
        Writer remote(remote_->path());
        remote.create("far-run-2", "far", 30);
        remote.write("far-run-2", 1, 30);
        remote.finish("far-run-2", 30);
        const RemoteLocation location = hostLocation();
        rememberRemote(location);

        CompareRuns compare(local_->path());
        QSignalSpy read(&compare, &CompareRuns::runsRead);
        QVERIFY(compare.setRuns({QStringLiteral("near-run"), runRefKey(location, QStringLiteral("far-run-2"))}));
        QVERIFY(read.wait(kTimeoutMs));
        QCOMPARE(read.at(0).at(0).toStringList(), QStringList());
        QCOMPARE(compare.runs().size(), size_t(2));
        QCOMPARE(compare.runs()[1].record.name, std::string("far"));
        QCOMPARE(compare.runs()[1].folder, location.cacheFolder());
        // One writer of the copy: the Training tab following the same run shares Compare's sync.
        RemoteFeed watched(location, QStringLiteral("far-run-2"));
        QCOMPARE(watched.sync(), compare.syncOf(runRefKey(location, QStringLiteral("far-run-2"))));
        QCOMPARE(compare.summaries()[1].name, QStringLiteral("far (gpu-node)"));
        QCOMPARE(compare.summaries()[0].name, QStringLiteral("near"));
        QSignalSpy curves(&compare, &CompareRuns::curvesRead);
        compare.loadCurves("train/loss");
        QVERIFY(curves.wait(kTimeoutMs));
        QCOMPARE(compare.curves()[0].points.size(), size_t(20));
        QCOMPARE(compare.curves()[1].points.size(), size_t(30));
        QCOMPARE(compare.curves()[1].points.back().value, lossAt(30));
    }

    // The run resumed on the host from an earlier checkpoint after its copy was read: the copy
    // is read afresh, and a feed that showed the old one says to open it again.
    void aRunWrittenAgainOnTheHostIsReadAfresh_data() {
        QTest::addColumn<int64_t>("last_step");
        QTest::newRow("fewer points than the copy") << int64_t(8);
        QTest::newRow("as many points as the copy") << int64_t(10);
    }
    void aRunWrittenAgainOnTheHostIsReadAfresh() {
        QFETCH(int64_t, last_step);
        Writer writer(remote_->path());
        writer.create("rw-run", "rw", 10);
        writer.write("rw-run", 1, 10);
        writer.finish("rw-run", 10);
        const RemoteLocation location = hostLocation();
        {
            RemoteFeed first(location, QStringLiteral("rw-run"));
            first.start();
            QTRY_COMPARE_WITH_TIMEOUT(first.sync()->state(), RemoteRunSync::State::Ended, kTimeoutMs);
        }
        QTest::qWait(50);  // the released sync goes
        // Resumed from step 5's checkpoint: steps 6 on again, with other values and wall times,
        // still running. With as many steps as before only the last point before step 10 tells.
        writer.store.reopenRun("rw-run", 5);
        std::vector<MetricPoint> again;
        for (int64_t step = 6; step <= last_step; ++step)
            for (MetricPoint& p : stepPoints(step)) again.push_back(p);
        for (MetricPoint& p : again) {
            p.value *= 2;
            p.wall_time += 100.0;
        }
        writer.store.commitBatch("rw-run", again, {});

        RemoteFeed second(location, QStringLiteral("rw-run"));
        QSignalSpy failed(&second, &StoreTail::failed);
        second.start();
        QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty(), kTimeoutMs);
        QVERIFY2(failed.last().at(0).toString().contains(QStringLiteral("written again on gpu-node")),
                 qPrintable(failed.last().at(0).toString()));
        QTRY_COMPARE_WITH_TIMEOUT(second.sync()->state(), RemoteRunSync::State::Live, kTimeoutMs);
        writer.finish("rw-run", last_step);
        QTRY_COMPARE_WITH_TIMEOUT(second.sync()->state(), RemoteRunSync::State::Ended, kTimeoutMs);
        RunStore copy(location.cacheFolder().toStdString());
        const auto curve = copy.metrics("rw-run", "train/loss");
        QCOMPARE(curve.size(), size_t(last_step));
        QCOMPARE(curve.back().value, 2 * lossAt(last_step));
        QCOMPARE(curve[4].value, lossAt(5));
    }

    void aHostThatWantsAPasswordIsRefusedWithoutRetrying() {
        qputenv("STAND_IN_SSH_REFUSE", "1");
        RemoteRunSync sync(hostLocation(), QStringLiteral("any-run"));
        sync.setRetryDelays(50, 50);
        sync.start();
        QTRY_COMPARE_WITH_TIMEOUT(sync.state(), RemoteRunSync::State::Failed, kTimeoutMs);
        QVERIFY2(sync.stateText().contains(QStringLiteral("ssh-add")), qPrintable(sync.stateText()));
        QVERIFY2(sync.stateText().contains(QStringLiteral("Permission denied")), qPrintable(sync.stateText()));
        QTest::qWait(300);
        QCOMPARE(sync.state(), RemoteRunSync::State::Failed);
        QCOMPARE(sync.connections(), 0);

        RemoteRunsLister lister(hostLocation());
        QSignalSpy failed(&lister, &RemoteRunsLister::failed);
        lister.refresh();
        QVERIFY(failed.wait(kTimeoutMs));
        QVERIFY(failed.at(0).at(0).toString().contains(QStringLiteral("password or passphrase")));
    }

    void whatTheHostLacksIsRefusedByName() {
        RemoteRunSync missing_run(hostLocation(), QStringLiteral("no-such-run"));
        missing_run.start();
        QTRY_COMPARE_WITH_TIMEOUT(missing_run.state(), RemoteRunSync::State::Failed, kTimeoutMs);
        QVERIFY2(missing_run.stateText().contains(QStringLiteral("is not in the store")),
                 qPrintable(missing_run.stateText()));

        RemoteLocation no_cli = hostLocation();
        no_cli.cli = QStringLiteral("/nowhere/trainbench-cli");
        RemoteRunSync missing_cli(no_cli, QStringLiteral("x"));
        missing_cli.start();
        QTRY_COMPARE_WITH_TIMEOUT(missing_cli.state(), RemoteRunSync::State::Failed, kTimeoutMs);
        QVERIFY2(missing_cli.stateText().contains(QStringLiteral("is not found on gpu-node")),
                 qPrintable(missing_cli.stateText()));

        RemoteRunSync hostile(hostLocation(), QStringLiteral("--help"));
        hostile.start();
        QCOMPARE(hostile.state(), RemoteRunSync::State::Failed);
        QVERIFY(hostile.stateText().contains(QStringLiteral("starts with '-'")));
    }

    // The window: the remote store in the runs list, one of its runs on the Training tab, what the
    // status line says while the connection is down, and the run's end.
    void theWindowWatchesARemoteRunFromTheRunsList() {
        Writer writer(remote_->path());
        writer.create("far-run-3", "far", 15);
        writer.write("far-run-3", 1, 12);
        MainWindow window(tinyGuiConfig(30), QStringLiteral("tiny"));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const RemoteLocation location = hostLocation();
        window.openRemoteStore(location);
        const QString key = runRefKey(location, QStringLiteral("far-run-3"));
        QTRY_VERIFY_WITH_TIMEOUT(window.runsPanel()->model()->rowOf(key) >= 0, kTimeoutMs);
        QVERIFY(window.watchRun(key));
        auto* feed = qobject_cast<RemoteFeed*>(window.storeTail());
        QVERIFY(feed);
        QTRY_COMPARE_WITH_TIMEOUT(window.plots()->lossRawGraph()->dataCount(), 12, kTimeoutMs);
        auto* status = child<QLabel>(window, "statusLabel");
        QTRY_VERIFY_WITH_TIMEOUT(status->text().contains(QStringLiteral("Watching run far-run-3 (on gpu-node)")),
                                 kTimeoutMs);

        feed->sync()->setRetryDelays(2000, 2000);
        feed->sync()->dropConnection();
        QTRY_VERIFY_WITH_TIMEOUT(status->text().contains(QStringLiteral("reconnecting in 2 s (attempt 1)")), kTimeoutMs);
        writer.write("far-run-3", 13, 15);
        writer.finish("far-run-3", 15);
        QTRY_VERIFY_WITH_TIMEOUT(status->text().contains(QStringLiteral("Run far-run-3 (on gpu-node) completed")),
                                 kTimeoutMs);
        QCOMPARE(window.plots()->lossRawGraph()->dataCount(), 15);
    }

    // File > Open remote store…: OK only for a location that parses, the reason beside it; the
    // recent locations remembered newest first, each once, with its CLI.
    void theDialogChecksAsItIsTypedAndRemembersRecentStores() {
        QTemporaryDir settings;
        qputenv("TRAINBENCH_SETTINGS", settings.filePath(QStringLiteral("settings.ini")).toLocal8Bit());
        const auto forget = qScopeGuard([] { qunsetenv("TRAINBENCH_SETTINGS"); });
        RemoteStoreDialog dialog;
        auto* edit = child<QComboBox>(dialog, "remoteLocationEdit");
        auto* problem = child<QLabel>(dialog, "remoteProblemLabel");
        auto* ok = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        QVERIFY(!ok->isEnabled());
        dialog.setLocationText(QStringLiteral("gpu-node:-rf"));
        QVERIFY(!ok->isEnabled());
        QVERIFY2(problem->text().contains(QStringLiteral("starts with '-'")), qPrintable(problem->text()));
        dialog.setLocationText(QStringLiteral("me@gpu-node:2200:/scratch/runs"));
        QVERIFY(ok->isEnabled());
        QVERIFY(problem->text().isEmpty());
        child<QLineEdit>(dialog, "remoteCliEdit")->setText(QStringLiteral("/opt/tb/bin/trainbench-cli"));
        QCOMPARE(dialog.location()->cli, QStringLiteral("/opt/tb/bin/trainbench-cli"));
        if (qEnvironmentVariableIsSet("TRAINBENCH_SAVE_GRABS"))
            dialog.grab().save(qEnvironmentVariable("TRAINBENCH_SAVE_GRABS") + QStringLiteral("/remote_dialog.png"));

        RemoteStoreDialog::rememberRecent(*dialog.location());
        RemoteStoreDialog::rememberRecent(*RemoteLocation::parse(QStringLiteral("other:/store"), nullptr));
        RemoteStoreDialog::rememberRecent(*dialog.location());
        const QList<RemoteLocation> recent = RemoteStoreDialog::recentLocations();
        QCOMPARE(recent.size(), 2);
        QCOMPARE(recent[0].label(), QStringLiteral("me@gpu-node:2200:/scratch/runs"));
        QCOMPARE(recent[0].cli, QStringLiteral("/opt/tb/bin/trainbench-cli"));
        QCOMPARE(recent[1].label(), QStringLiteral("other:/store"));
        RemoteStoreDialog reopened;
        QCOMPARE(child<QComboBox>(reopened, "remoteLocationEdit")->count(), 2);
        QCOMPARE(child<QLineEdit>(reopened, "remoteCliEdit")->text(), QStringLiteral("/opt/tb/bin/trainbench-cli"));
    }

    // The same through a real sshd on the loopback (throwaway_sshd.sh), where one can start.
    void overARealSshdEveryStepArrivesOnceAcrossADrop() {
        QTemporaryDir keys;
        QProcess setup;
        setup.start(QStringLiteral("bash"), {QStringLiteral(THROWAWAY_SSHD), keys.path()});
        QVERIFY(setup.waitForFinished(60000));
        if (setup.exitCode() != 0)
            QSKIP(qPrintable(QStringLiteral("no sshd can start on this machine: ") +
                             QString::fromUtf8(setup.readAllStandardError()).trimmed()));
        QFile pid_file(keys.filePath(QStringLiteral("sshd.pid")));
        QVERIFY(pid_file.open(QIODevice::ReadOnly));
        const pid_t sshd = static_cast<pid_t>(pid_file.readAll().trimmed().toLongLong());
        const auto stop_sshd = qScopeGuard([sshd] { ::kill(sshd, SIGTERM); });
        QFile port_file(keys.filePath(QStringLiteral("port")));
        QVERIFY(port_file.open(QIODevice::ReadOnly));
        const QString port = QString::fromLatin1(port_file.readAll().trimmed());
        const QByteArray stand_in = qgetenv("TRAINBENCH_SSH");
        qputenv("TRAINBENCH_SSH", keys.filePath(QStringLiteral("ssh")).toLocal8Bit());
        const auto restore = qScopeGuard([stand_in] { qputenv("TRAINBENCH_SSH", stand_in); });

        RemoteLocation location = *RemoteLocation::parse(
            QString::fromLocal8Bit(::getpwuid(::getuid())->pw_name) + QStringLiteral("@127.0.0.1:") + port +
                QLatin1Char(':') + remote_->path(),
            nullptr);
        location.cli = QStringLiteral(TRAINBENCH_CLI_PATH);
        Writer writer(remote_->path());
        writer.create("sshd-run", "over sshd", 40);
        writer.write("sshd-run", 1, 5);
        RemoteRunsLister lister(location);
        QSignalSpy listed(&lister, &RemoteRunsLister::listed);
        lister.refresh();
        QVERIFY(listed.wait(kTimeoutMs));
        QCOMPARE(listed.at(0).at(0).value<std::vector<RunRecord>>().size(), size_t(1));

        RemoteFeed feed(location, QStringLiteral("sshd-run"));
        feed.sync()->setRetryDelays(100, 400);
        LossSteps steps;
        QString finished_status;
        connect(&feed, &RunFeed::pointsArrived, this, [&](const QVector<MetricPoint>& points) { steps.take(points); });
        connect(&feed, &RunFeed::runFinished, this, [&](const RunSummary&, const QString& status) { finished_status = status; });
        feed.start();
        QTRY_VERIFY_WITH_TIMEOUT(steps.seen.size() >= 5, kTimeoutMs);
        for (int64_t step = 6; step <= 40; ++step) {
            writer.write("sshd-run", step, step);
            QTest::qWait(20);
            if (step == 20) {
                QTRY_VERIFY_WITH_TIMEOUT(steps.seen.size() >= 15, kTimeoutMs);
                feed.sync()->dropConnection();
            }
        }
        writer.finish("sshd-run", 40);
        QTRY_COMPARE_WITH_TIMEOUT(finished_status, QStringLiteral("completed"), kTimeoutMs);
        QVERIFY2(steps.exactlyOnce(40), qPrintable(steps.differences(40)));
        QVERIFY(feed.sync()->connections() >= 2);
    }

private:
    RemoteLocation hostLocation() const {
        RemoteLocation location = *RemoteLocation::parse(QStringLiteral("gpu-node:") + remote_->path(), nullptr);
        location.cli = QStringLiteral(TRAINBENCH_CLI_PATH);
        return location;
    }

    QTemporaryDir cache_;
    std::unique_ptr<QTemporaryDir> remote_, local_;
};

QTEST_MAIN(TestRemoteStore)
#include "test_remote_store.moc"
