// trainbench: the workbench's entry point: opens a config, optionally trains it and saves a screenshot.
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QEventLoop>
#include <QFileInfo>
#include <QIcon>
#include <QMessageBox>
#include <QPixmap>
#include <QStringList>

#include "app/command_line.h"
#include "app/main_window.h"
#include "app/remote_store_dialog.h"
#include "batch/batch_panel.h"
#include "compare/compare_view.h"
#include "queue/queue_view.h"
#include "queue/run_queue.h"
#include "runs/engine_bridge.h"
#include "runs/runs_model.h"
#include "runs/remote_feed.h"
#include "runs/remote_location.h"
#include "runs/run_ref.h"
#include "runs/runs_panel.h"
#include "runs/store_tail.h"
#include "trainbench/config_grid.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"

namespace {

// The CLI's exit codes, so scripts treat both programs alike.
constexpr int kExitOk = 0;
constexpr int kExitInvalidInput = 2;
constexpr int kExitRunFailed = 3;

using trainbench::gui::kScreenshotHeight;
using trainbench::gui::kScreenshotWidth;

// Headless invocations (--screenshot) have nobody to click a dialog away; they get stderr only.
int fail(const QString& message, bool headless, int code = kExitInvalidInput) {
    std::fprintf(stderr, "trainbench: %s\n", qPrintable(message));
    if (!headless) QMessageBox::critical(nullptr, QStringLiteral("Trainbench"), message);
    return code;
}

// --help and --version with a QCoreApplication only, so they answer without a display.
int answerInformation(int argc, char** argv) {
    QCoreApplication core(argc, argv);
    trainbench::gui::nameApplication();
    trainbench::gui::CommandLine line;
    if (!line.parser.parse(QCoreApplication::arguments())) {
        std::fprintf(stderr, "trainbench: %s\n\n%s", qPrintable(line.parser.errorText()),
                     qPrintable(line.parser.helpText()));
        return kExitInvalidInput;
    }
    if (line.parser.isSet(line.version) && !line.parser.isSet(line.help)) line.parser.showVersion();
    line.parser.showHelp(kExitOk);  // also for --help-all; exits
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    if (trainbench::gui::asksOnlyForInformation(argc, argv)) return answerInformation(argc, argv);
    QApplication app(argc, argv);
    trainbench::gui::nameApplication();
    QApplication::setApplicationDisplayName(QStringLiteral("Trainbench"));
    // The icons live in a static library's resources: register them by name (outside any namespace).
    Q_INIT_RESOURCE(icons);
    QIcon icon;
    for (int size : {16, 24, 32, 48, 64, 128, 256})
        icon.addFile(QStringLiteral(":/icons/trainbench-%1.png").arg(size), QSize(size, size));
    QApplication::setWindowIcon(icon);
    QApplication::setDesktopFileName(QStringLiteral("trainbench"));

    trainbench::gui::CommandLine line;
    QCommandLineParser& parser = line.parser;

    // parse() rather than process(): a bad option must exit with 2, as in trainbench-cli.
    const bool parsed = parser.parse(QApplication::arguments());
    const bool headless = parser.isSet(line.screenshot);
    if (!parsed) return fail(parser.errorText() + QStringLiteral("\n\n") + parser.helpText(), headless);

    const QString view_name = parser.value(line.view);
    const QStringList view_names{QStringLiteral("configure"), QStringLiteral("training"), QStringLiteral("samples"),
                                 QStringLiteral("batch"), QStringLiteral("queue"), QStringLiteral("compare")};
    if (parser.isSet(line.view) && !view_names.contains(view_name))
        return fail(
            QStringLiteral("--view takes configure, training, samples, batch, queue or compare, got '%1'").arg(view_name),
            headless);
    QStringList compare_ids;
    for (const QString& id : parser.value(line.compare).split(QLatin1Char(','), Qt::SkipEmptyParts))
        compare_ids << id.trimmed();
    if (parser.isSet(line.compare) && compare_ids.isEmpty())
        return fail(QStringLiteral("--compare needs run ids separated by commas"), headless);
    QString watch_id = parser.value(line.watch).trimmed();
    if (parser.isSet(line.watch) && watch_id.isEmpty())
        return fail(QStringLiteral("--watch needs a run id (trainbench-cli runs lists them)"), headless);
    // A remote store: --watch names one of its runs, --compare its runs as ID@remote.
    std::optional<trainbench::gui::RemoteLocation> remote;
    if (parser.isSet(line.remote)) {
        QString why;
        remote = trainbench::gui::RemoteLocation::parse(parser.value(line.remote), &why);
        if (!remote) return fail(QStringLiteral("--remote: %1").arg(why), headless);
        // The CLI's path: given, else the one remembered for this store, else the PATH's.
        for (const trainbench::gui::RemoteLocation& recent : trainbench::gui::RemoteStoreDialog::recentLocations())
            if (recent.label() == remote->label()) remote->cli = recent.cli;
        if (parser.isSet(line.remote_cli)) remote->cli = parser.value(line.remote_cli);
        if (const QString bad = remote->problem(); !bad.isEmpty())
            return fail(QStringLiteral("--remote-cli: %1").arg(bad), headless);
        if (!watch_id.isEmpty()) {
            if (const QString bad = trainbench::gui::RemoteLocation::runIdProblem(watch_id); !bad.isEmpty())
                return fail(QStringLiteral("--watch: %1").arg(bad), headless);
            watch_id = trainbench::gui::runRefKey(*remote, watch_id);
        }
    }
    for (QString& id : compare_ids) {
        if (!id.endsWith(QStringLiteral("@remote"))) continue;
        if (!remote) return fail(QStringLiteral("--compare: %1 names a remote run, but no --remote store is given").arg(id), headless);
        const QString run_id = id.chopped(7);
        if (const QString bad = trainbench::gui::RemoteLocation::runIdProblem(run_id); !bad.isEmpty())
            return fail(QStringLiteral("--compare: %1").arg(bad), headless);
        id = trainbench::gui::runRefKey(*remote, run_id);
    }
    std::vector<trainbench::GridAxis> grid_axes;
    try {
        for (const QString& text : parser.values(line.grid))
            grid_axes.push_back(trainbench::parseGridAxis(text.toStdString()));
    } catch (const trainbench::ConfigError& error) {
        return fail(QString::fromStdString(error.what()), headless);
    }
    if ((parser.isSet(line.grid) || parser.isSet(line.run_queue)) &&
        (parser.isSet(line.run_steps) || parser.isSet(line.watch)))
        return fail(QStringLiteral("--grid and --run-queue cannot be combined with --run-steps or --watch: the "
                                   "window shows one run at a time"),
                    headless);
    // The window's own run would end the watching at once.
    if (parser.isSet(line.remote_cli) && !parser.isSet(line.remote))
        return fail(QStringLiteral("--remote-cli names the CLI of a --remote store: give --remote too"), headless);
    if (parser.isSet(line.watch) && parser.isSet(line.run_steps))
        return fail(QStringLiteral("--watch and --run-steps cannot be combined: the window shows one run"), headless);
    // The engine's runs and the window's lists both open RunStore::defaultFolder(), which
    // honours TRAINBENCH_STORE: setting it here points all of them at one folder.
    if (parser.isSet(line.store)) {
        const QString store = parser.value(line.store);
        if (store.isEmpty()) return fail(QStringLiteral("--store needs a folder"), headless);
        qputenv("TRAINBENCH_STORE", QFileInfo(store).absoluteFilePath().toLocal8Bit());
    }

    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1)
        return fail(QStringLiteral("expected at most one CONFIG, got %1: %2")
                        .arg(positional.size())
                        .arg(positional.join(QStringLiteral(" "))),
                    headless);

    trainbench::RunConfig config;
    QString config_name;
    QString config_path = positional.isEmpty() ? trainbench::gui::defaultConfigPath() : positional.front();
    try {
        if (config_path.isEmpty()) {
            config = trainbench::builtinTinyConfig();
            config_name = QStringLiteral("built-in tiny preset");
        } else {
            config = trainbench::loadRunConfigFile(QFileInfo(config_path).filePath().toStdString());
            config_name = config_path;
        }
        if (parser.isSet(line.run_steps)) {
            bool ok = false;
            const QString text = parser.value(line.run_steps);
            const qlonglong steps = text.toLongLong(&ok);
            if (!ok || steps < 1)
                return fail(QStringLiteral("--run-steps needs a whole number of steps >= 1, got '%1'").arg(text),
                            headless);
            // N steps, not the config's length in tokens or samples (an adaptive batch: the
            // tokens a fixed batch reads in N steps).
            trainbench::applyConfigOverride(config, "train.steps=" + std::to_string(steps));
            trainbench::applyConfigOverride(config, "train.tokens=0");
            trainbench::applyConfigOverride(config, "train.samples=0");
        }
    } catch (const trainbench::ConfigError& error) {
        return fail(QString::fromStdString(error.what()), headless);
    } catch (const std::exception& error) {
        return fail(QStringLiteral("cannot read %1: %2").arg(config_path, QString::fromStdString(error.what())),
                    headless);
    }

    // Problems only in the data section leave a config the window shows, as File > Open does: a
    // published model config counts its parameters and plans its memory, its data problem
    // marked on the Configure view (Start then reports it).
    // Training at once (--run-steps, --explore, --run-queue) needs every section valid.
    const bool trains_now =
        parser.isSet(line.run_steps) || parser.isSet(line.explore) || parser.isSet(line.run_queue);
    const std::vector<trainbench::ConfigIssue> issues = trainbench::validateRunConfig(config);
    QStringList blocking;
    for (const trainbench::ConfigIssue& issue : issues)
        if (trains_now || !trainbench::isDataIssue(issue)) blocking << QString::fromStdString(issue.message);
    if (!blocking.isEmpty())
        return fail(QStringLiteral("%1 is not a valid run config:\n%2").arg(config_name, blocking.join(QLatin1Char('\n'))),
                    headless);

    trainbench::gui::MainWindow window(config, config_name);
    window.resize(kScreenshotWidth, kScreenshotHeight);
    // A screenshot shows the window as built, whatever an earlier session left behind, and
    // leaves the remembered layout alone.
    const bool restored_tab = !headless && window.rememberLayout();
    using Tab = trainbench::gui::MainWindow::Tab;
    const bool show_batch = view_name == QLatin1String("batch") || parser.isSet(line.explore);
    const bool show_compare = view_name == QLatin1String("compare") || !compare_ids.isEmpty();
    if (show_batch) window.showTab(Tab::Batch);
    else if (show_compare) window.showTab(Tab::Compare);
    else if (view_name == QLatin1String("configure")) window.showTab(Tab::Configure);
    else if (view_name == QLatin1String("samples")) window.showTab(Tab::Samples);
    else if (view_name == QLatin1String("queue") || (!parser.isSet(line.view) && !grid_axes.empty()))
        window.showTab(Tab::Queue);
    else if (view_name == QLatin1String("training") || !restored_tab) window.showTab(Tab::Training);
    window.show();
    if (remote) {
        trainbench::gui::rememberRemote(*remote);
        QEventLoop loop;
        QString listing_error;
        QObject::connect(window.runsPanel(), &trainbench::gui::RunsPanel::remoteListed, &loop,
                         [&](const QString&, const QString& message) {
                             listing_error = message;
                             loop.quit();
                         });
        window.openRemoteStore(*remote);
        // A picture shows the remote runs listed (and selected); a store that cannot be listed
        // is an error there, not an empty list.
        if (headless) {
            loop.exec();
            if (!listing_error.isEmpty()) return fail(QStringLiteral("--remote: %1").arg(listing_error), headless);
        }
    }
    if (!compare_ids.isEmpty()) window.compareRuns(compare_ids);
    if (!watch_id.isEmpty()) {
        window.watchRun(watch_id);
        // An explicit view wins over the training view that watching opens.
        if (show_batch) window.showTab(Tab::Batch);
        else if (show_compare) window.showTab(Tab::Compare);
        else if (view_name == QLatin1String("configure")) window.showTab(Tab::Configure);
        else if (view_name == QLatin1String("samples")) window.showTab(Tab::Samples);
        else if (view_name == QLatin1String("queue")) window.showTab(Tab::Queue);
        // The first read decides: an unknown run is an error, not an empty window.
        trainbench::gui::StoreTail* tail = window.storeTail();
        QEventLoop loop;
        QString watch_error;
        QObject::connect(tail, &trainbench::gui::StoreTail::loaded, &loop, &QEventLoop::quit);
        QObject::connect(tail, &trainbench::gui::StoreTail::failed, &loop, [&](const QString& message) {
            if (tail->isLoaded()) return;
            watch_error = message;
            loop.quit();
        });
        // A remote run whose host refuses, or cannot be reached, never reaches the tail's first read.
        if (auto* feed = qobject_cast<trainbench::gui::RemoteFeed*>(tail))
            QObject::connect(feed->sync(), &trainbench::gui::RemoteRunSync::stateChanged, &loop,
                             [&](trainbench::gui::RemoteRunSync::State state, const QString& message) {
                                 using State = trainbench::gui::RemoteRunSync::State;
                                 if ((state != State::Failed && state != State::Reconnecting) || tail->isLoaded()) return;
                                 watch_error = message;
                                 loop.quit();
                             });
        if (!tail->isLoaded()) loop.exec();
        if (!watch_error.isEmpty()) return fail(QStringLiteral("--watch: %1").arg(watch_error), headless);
    }

    if (!grid_axes.empty() && !window.queueView()->enqueueGrid(grid_axes, /*keep_global_batch=*/true))
        return fail(QStringLiteral("--grid: %1").arg(window.queueView()->gridMessage()), headless);

    int exit_code = kExitOk;
    if (parser.isSet(line.run_queue)) {
        trainbench::gui::QueueView* queue_view = window.queueView();
        if (grid_axes.empty()) queue_view->enqueueShownConfig();
        QEventLoop loop;
        QObject::connect(queue_view, &trainbench::gui::QueueView::queueRunningChanged, &loop, [&](bool running) {
            if (!running) loop.quit();
        });
        window.startQueue();
        // Closing the window quits the loop; the window's destruction then stops the live run.
        if (queue_view->isQueueRunning()) loop.exec();
        if (queue_view->isQueueRunning() && !headless) return exit_code;
        if (queue_view->queue()->countIn(trainbench::gui::RunQueue::State::Failed) > 0) {
            std::fprintf(stderr, "trainbench: %d queued run(s) failed\n",
                         queue_view->queue()->countIn(trainbench::gui::RunQueue::State::Failed));
            exit_code = kExitRunFailed;
        }
    }
    if (parser.isSet(line.explore)) {
        trainbench::gui::BatchPanel* panel = window.batchPanel();
        QEventLoop loop;
        bool explored = false;
        QObject::connect(panel, &trainbench::gui::BatchPanel::explorationFinished, &loop, [&] {
            explored = true;
            loop.quit();
        });
        if (!panel->explore()) return fail(QStringLiteral("cannot start the batch explorer"), headless);
        // Closing the window quits the loop; the panel's destruction then stops the explorer.
        if (!explored) loop.exec();
        if (!explored && !headless) return exit_code;
    }
    if (parser.isSet(line.run_steps)) {
        QEventLoop loop;
        bool finished = false;
        trainbench::RunSummary summary;
        QObject::connect(window.bridge(), &trainbench::gui::EngineBridge::runFinished, &loop,
                         [&](const trainbench::RunSummary& result) {
                             summary = result;
                             finished = true;
                             loop.quit();
                         });
        QString start_error;
        QObject::connect(window.bridge(), &trainbench::gui::EngineBridge::startFailed, &loop,
                         [&](const QString& message) { start_error = message; });
        if (!window.startRun()) return fail(QStringLiteral("cannot start the run: %1").arg(start_error), headless);
        // Closing the window quits every running loop; the window's destruction then stops the run.
        if (!finished) loop.exec();
        if (finished && summary.status == trainbench::RunStatus::Failed) {
            std::fprintf(stderr, "trainbench: the run failed: %s\n", summary.error.c_str());
            exit_code = kExitRunFailed;
        }
        if (!finished && !headless) return exit_code;
    }

    if (headless && !compare_ids.isEmpty()) {
        // The screenshot shows the compared runs selected in the list and their curves drawn.
        trainbench::gui::CompareView* compare = window.compareView();
        trainbench::gui::RunsModel* runs = window.runsPanel()->model();
        QEventLoop loop;
        QString load_error;
        auto quitWhenReady = [&] {
            if (compare->isLoaded() && runs->isLoaded()) loop.quit();
        };
        QObject::connect(compare, &trainbench::gui::CompareView::loaded, &loop, quitWhenReady);
        QObject::connect(runs, &trainbench::gui::RunsModel::refreshed, &loop, quitWhenReady);
        QObject::connect(compare, &trainbench::gui::CompareView::loadFailed, &loop, [&](const QString& message) {
            load_error = message;
            loop.quit();
        });
        QObject::connect(runs, &trainbench::gui::RunsModel::refreshFailed, &loop, [&](const QString& message) {
            load_error = message;
            loop.quit();
        });
        if (!compare->isLoaded() || !runs->isLoaded()) loop.exec();
        if (!load_error.isEmpty()) return fail(QStringLiteral("--compare: %1").arg(load_error), headless);
    }
    if (headless) {
        const QString file = parser.value(line.screenshot);
        QApplication::processEvents();  // let layouts settle at the final size
        window.flushView();
        const QPixmap shot = window.grab();
        if (!shot.save(file, "PNG"))
            return fail(QStringLiteral("cannot write the screenshot to '%1'").arg(file), headless);
        return exit_code;
    }
    return QApplication::exec();
}
