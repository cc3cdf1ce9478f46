// trainbench: the workbench's entry point: opens a config, optionally trains it and saves a screenshot.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <QApplication>
#include <QCommandLineParser>
#include <QEventLoop>
#include <QFileInfo>
#include <QIcon>
#include <QMessageBox>
#include <QPixmap>
#include <QStringList>

#include "trainbench/presets.h"
#include "batch/batch_panel.h"
#include "compare/compare_view.h"
#include "queue/queue_view.h"
#include "queue/run_queue.h"
#include "trainbench/config_grid.h"
#include "runs/engine_bridge.h"
#include "app/main_window.h"
#include "runs/runs_model.h"
#include "runs/runs_panel.h"
#include "runs/store_tail.h"
#include "trainbench/config_io.h"

namespace {

// The CLI's exit codes, so scripts treat both programs alike.
constexpr int kExitOk = 0;
constexpr int kExitInvalidInput = 2;
constexpr int kExitRunFailed = 3;

constexpr int kScreenshotWidth = 1280;
constexpr int kScreenshotHeight = 800;

const char* const kDefaultConfigPath = "configs/tiny.json";

// Headless invocations (--screenshot) have nobody to click a dialog away; they get stderr only.
int fail(const QString& message, bool headless, int code = kExitInvalidInput) {
    std::fprintf(stderr, "trainbench: %s\n", qPrintable(message));
    if (!headless) QMessageBox::critical(nullptr, QStringLiteral("Trainbench"), message);
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    // The icons live in a static library's resources: register them by name (outside any namespace).
    Q_INIT_RESOURCE(icons);
    QIcon icon;
    for (int size : {16, 24, 32, 48, 64, 128, 256})
        icon.addFile(QStringLiteral(":/icons/trainbench-%1.png").arg(size), QSize(size, size));
    QApplication::setWindowIcon(icon);
    QApplication::setDesktopFileName(QStringLiteral("trainbench"));
    QApplication::setApplicationName(QStringLiteral("trainbench"));
    QApplication::setApplicationDisplayName(QStringLiteral("Trainbench"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Workbench for training DeepSeek-style models.\n"
        "Exit codes: 0 success, 2 invalid input, 3 the run failed."));
    const QCommandLineOption help_option = parser.addHelpOption();
    const QCommandLineOption version_option = parser.addVersionOption();
    parser.addPositionalArgument(
        QStringLiteral("config"),
        QStringLiteral("Run config JSON file (default: %1, else the built-in tiny preset).")
            .arg(QString::fromLatin1(kDefaultConfigPath)),
        QStringLiteral("[CONFIG]"));
    const QCommandLineOption run_steps_option(
        QStringLiteral("run-steps"),
        QStringLiteral("Start a run of <N> optimizer steps at once and wait for it to end."),
        QStringLiteral("N"));
    const QCommandLineOption screenshot_option(
        QStringLiteral("screenshot"),
        QStringLiteral("Save the window (%1x%2) as PNG to <FILE> once populated (after the run "
                       "with --run-steps), then exit.")
            .arg(kScreenshotWidth)
            .arg(kScreenshotHeight),
        QStringLiteral("FILE"));
    const QCommandLineOption view_option(
        QStringList{QStringLiteral("view"), QStringLiteral("tab")},
        QStringLiteral("Show view <NAME> at start: configure (the config as a form and as JSON), training (the "
                       "live plots; the default, else the view open when the workbench was last closed), batch "
                       "(the batch split, its memory plan and the explorer), queue (runs and grids waiting to train) or "
                       "compare (the runs selected in the "
                       "runs list). --tab is an alias."),
        QStringLiteral("NAME"));
    const QCommandLineOption compare_option(
        QStringLiteral("compare"),
        QStringLiteral("Select the runs <IDS> (comma-separated run ids) and show them on the Compare view; "
                       "--screenshot waits until their curves have loaded."),
        QStringLiteral("IDS"));
    const QCommandLineOption store_option(
        QStringLiteral("store"),
        QStringLiteral("Run store folder <DIR> to record runs in and list them from (default: $TRAINBENCH_STORE, "
                       "else $XDG_DATA_HOME/trainbench)."),
        QStringLiteral("DIR"));
    const QCommandLineOption explore_option(
        QStringLiteral("explore"),
        QStringLiteral("Run the batch explorer on the config at once (on the batch tab) and wait for it to end, "
                       "before --run-steps and --screenshot."));
    const QCommandLineOption watch_option(
        QStringLiteral("watch"),
        QStringLiteral("Show run <RUN_ID> of the store on the training view as another process (a headless "
                       "trainbench-cli run) writes it, or as it was written; --screenshot shows what is stored "
                       "so far."),
        QStringLiteral("RUN_ID"));
    const QCommandLineOption grid_option(
        QStringLiteral("grid"),
        QStringLiteral("Enqueue a grid over FIELD with these values, e.g. --grid train.lr=1e-3,3e-3; give it twice "
                       "for two fields (every combination, the global batch kept) and the queue view opens."),
        QStringLiteral("FIELD=VALUES"));
    const QCommandLineOption run_queue_option(
        QStringLiteral("run-queue"),
        QStringLiteral("Start the queue (the --grid runs, else the config once); with --screenshot, wait until "
                       "every queued run has ended, then capture."));
    parser.addOption(run_steps_option);
    parser.addOption(grid_option);
    parser.addOption(run_queue_option);
    parser.addOption(watch_option);
    parser.addOption(screenshot_option);
    parser.addOption(view_option);
    parser.addOption(compare_option);
    parser.addOption(store_option);
    parser.addOption(explore_option);

    // parse() rather than process(): a bad option must exit with 2, as in trainbench-cli.
    const bool parsed = parser.parse(QApplication::arguments());
    const bool headless = parser.isSet(screenshot_option);
    if (!parsed) return fail(parser.errorText() + QStringLiteral("\n\n") + parser.helpText(), headless);
    if (parser.isSet(help_option)) parser.showHelp(kExitOk);
    if (parser.isSet(version_option)) parser.showVersion();

    const QString view_name = parser.value(view_option);
    const QStringList view_names{QStringLiteral("configure"), QStringLiteral("training"), QStringLiteral("batch"),
                                 QStringLiteral("queue"), QStringLiteral("compare")};
    if (parser.isSet(view_option) && !view_names.contains(view_name))
        return fail(QStringLiteral("--view takes configure, training, batch, queue or compare, got '%1'").arg(view_name),
                    headless);
    QStringList compare_ids;
    for (const QString& id : parser.value(compare_option).split(QLatin1Char(','), Qt::SkipEmptyParts))
        compare_ids << id.trimmed();
    if (parser.isSet(compare_option) && compare_ids.isEmpty())
        return fail(QStringLiteral("--compare needs run ids separated by commas"), headless);
    const QString watch_id = parser.value(watch_option).trimmed();
    if (parser.isSet(watch_option) && watch_id.isEmpty())
        return fail(QStringLiteral("--watch needs a run id (trainbench-cli runs lists them)"), headless);
    std::vector<trainbench::GridAxis> grid_axes;
    try {
        for (const QString& text : parser.values(grid_option))
            grid_axes.push_back(trainbench::parseGridAxis(text.toStdString()));
    } catch (const trainbench::ConfigError& error) {
        return fail(QString::fromStdString(error.what()), headless);
    }
    if ((parser.isSet(grid_option) || parser.isSet(run_queue_option)) &&
        (parser.isSet(run_steps_option) || parser.isSet(watch_option)))
        return fail(QStringLiteral("--grid and --run-queue cannot be combined with --run-steps or --watch: the "
                                   "window shows one run at a time"),
                    headless);
    // The window's own run would end the watching at once.
    if (parser.isSet(watch_option) && parser.isSet(run_steps_option))
        return fail(QStringLiteral("--watch and --run-steps cannot be combined: the window shows one run"), headless);
    // The engine's runs and the window's lists both open RunStore::defaultFolder(), which
    // honours TRAINBENCH_STORE: setting it here points all of them at one folder.
    if (parser.isSet(store_option)) {
        const QString store = parser.value(store_option);
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
    QString config_path = positional.isEmpty() ? QString() : positional.front();
    if (config_path.isEmpty() && QFileInfo::exists(QString::fromLatin1(kDefaultConfigPath)))
        config_path = QString::fromLatin1(kDefaultConfigPath);
    try {
        if (config_path.isEmpty()) {
            config = trainbench::builtinTinyConfig();
            config_name = QStringLiteral("built-in tiny preset");
        } else {
            config = trainbench::loadRunConfigFile(QFileInfo(config_path).filePath().toStdString());
            config_name = config_path;
        }
        if (parser.isSet(run_steps_option)) {
            bool ok = false;
            const QString text = parser.value(run_steps_option);
            const qlonglong steps = text.toLongLong(&ok);
            if (!ok || steps < 1)
                return fail(QStringLiteral("--run-steps needs a whole number of steps >= 1, got '%1'").arg(text),
                            headless);
            trainbench::applyConfigOverride(config, "train.steps=" + std::to_string(steps));
        }
    } catch (const trainbench::ConfigError& error) {
        return fail(QString::fromStdString(error.what()), headless);
    } catch (const std::exception& error) {
        return fail(QStringLiteral("cannot read %1: %2").arg(config_path, QString::fromStdString(error.what())),
                    headless);
    }

    const std::vector<trainbench::ConfigIssue> issues = trainbench::validateRunConfig(config);
    if (!issues.empty()) {
        QStringList lines;
        for (const trainbench::ConfigIssue& issue : issues) lines << QString::fromStdString(issue.message);
        return fail(QStringLiteral("%1 is not a valid run config:\n%2").arg(config_name, lines.join(QLatin1Char('\n'))),
                    headless);
    }

    trainbench::gui::MainWindow window(config, config_name);
    window.resize(kScreenshotWidth, kScreenshotHeight);
    // A screenshot shows the window as built, whatever an earlier session left behind, and
    // leaves the remembered layout alone.
    const bool restored_tab = !headless && window.rememberLayout();
    using Tab = trainbench::gui::MainWindow::Tab;
    const bool show_batch = view_name == QLatin1String("batch") || parser.isSet(explore_option);
    const bool show_compare = view_name == QLatin1String("compare") || !compare_ids.isEmpty();
    if (show_batch) window.showTab(Tab::Batch);
    else if (show_compare) window.showTab(Tab::Compare);
    else if (view_name == QLatin1String("configure")) window.showTab(Tab::Configure);
    else if (view_name == QLatin1String("queue") || (!parser.isSet(view_option) && !grid_axes.empty()))
        window.showTab(Tab::Queue);
    else if (view_name == QLatin1String("training") || !restored_tab) window.showTab(Tab::Training);
    window.show();
    if (!compare_ids.isEmpty()) window.compareRuns(compare_ids);
    if (!watch_id.isEmpty()) {
        window.watchRun(watch_id);
        // An explicit view wins over the training view that watching opens.
        if (show_batch) window.showTab(Tab::Batch);
        else if (show_compare) window.showTab(Tab::Compare);
        else if (view_name == QLatin1String("configure")) window.showTab(Tab::Configure);
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
        if (!tail->isLoaded()) loop.exec();
        if (!watch_error.isEmpty()) return fail(QStringLiteral("--watch: %1").arg(watch_error), headless);
    }

    if (!grid_axes.empty() && !window.queueView()->enqueueGrid(grid_axes, /*keep_global_batch=*/true))
        return fail(QStringLiteral("--grid: %1").arg(window.queueView()->gridMessage()), headless);

    int exit_code = kExitOk;
    if (parser.isSet(run_queue_option)) {
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
    if (parser.isSet(explore_option)) {
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
    if (parser.isSet(run_steps_option)) {
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
        const QString file = parser.value(screenshot_option);
        QApplication::processEvents();  // let layouts settle at the final size
        window.flushView();
        const QPixmap shot = window.grab();
        if (!shot.save(file, "PNG"))
            return fail(QStringLiteral("cannot write the screenshot to '%1'").arg(file), headless);
        return exit_code;
    }
    return QApplication::exec();
}
