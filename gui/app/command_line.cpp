// CommandLine: the workbench's options, parsed before any window (or display) is needed.
#include "app/command_line.h"

#include <cstring>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace trainbench::gui {

namespace {

const char* const kWorkingFolderConfig = "configs/tiny.json";
const char* const kInstalledConfig = "../share/trainbench/configs/tiny.json";  // from PREFIX/bin

}  // namespace

CommandLine::CommandLine()
    : help(parser.addHelpOption()),
      version(parser.addVersionOption()),
      run_steps(QStringLiteral("run-steps"),
                QStringLiteral("Start a run of <N> optimizer steps at once and wait for it to end."),
                QStringLiteral("N")),
      grid(QStringLiteral("grid"),
           QStringLiteral("Enqueue a grid over FIELD with these values, e.g. --grid train.lr=1e-3,3e-3; give it "
                          "twice for two fields (every combination, the global batch kept) and the queue view opens."),
           QStringLiteral("FIELD=VALUES")),
      run_queue(QStringLiteral("run-queue"),
                QStringLiteral("Start the queue (the --grid runs, else the config once); with --screenshot, wait "
                               "until every queued run has ended, then capture.")),
      watch(QStringLiteral("watch"),
            QStringLiteral("Show run <RUN_ID> of the store on the training view as another process (a headless "
                           "trainbench-cli run) writes it, or as it was written; --screenshot shows what is stored "
                           "so far."),
            QStringLiteral("RUN_ID")),
      screenshot(QStringLiteral("screenshot"),
                 QStringLiteral("Save the window (%1x%2) as PNG to <FILE> once populated (after the run with "
                                "--run-steps), then exit.")
                     .arg(kScreenshotWidth)
                     .arg(kScreenshotHeight),
                 QStringLiteral("FILE")),
      view(QStringList{QStringLiteral("view"), QStringLiteral("tab")},
                  QStringLiteral("Show view <NAME> at start: configure (the config as a form and as JSON), training "
                                 "(the live plots; the default, else the view open when the workbench was last "
                                 "closed), samples (the training view's Samples page: what the run wrote as it "
                                 "trained, and Generate), batch (the batch split, its memory plan and the explorer), "
                                 "queue (runs and grids waiting to train) or compare (the runs selected in the runs "
                                 "list). --tab is an alias."),
                  QStringLiteral("NAME")),
      compare(QStringLiteral("compare"),
              QStringLiteral("Select the runs <IDS> (comma-separated run ids) and show them on the Compare view; "
                             "--screenshot waits until their curves have loaded."),
              QStringLiteral("IDS")),
      store(QStringLiteral("store"),
            QStringLiteral("Run store folder <DIR> to record runs in and list them from (default: $TRAINBENCH_STORE, "
                           "else $XDG_DATA_HOME/trainbench)."),
            QStringLiteral("DIR")),
      remote(QStringLiteral("remote"),
             QStringLiteral("List the runs of the store <LOCATION>, [user@]host[:port]:/path, on another machine beside "
                            "the local ones, read with your own ssh (BatchMode: a key or the agent, never a password) "
                            "running trainbench-cli there (TRAINBENCH_SSH names another ssh program). With it, "
                            "--watch shows a run of that store, and --compare takes its runs as ID@remote."),
             QStringLiteral("LOCATION")),
      remote_cli(QStringLiteral("remote-cli"),
                 QStringLiteral("With --remote: trainbench-cli's path on that machine (default: trainbench-cli on the "
                                "PATH of its non-interactive shell, or the path remembered for that store)."),
                 QStringLiteral("PATH")),
      explore(QStringLiteral("explore"),
              QStringLiteral("Run the batch explorer on the config at once (on the batch tab) and wait for it to end, "
                             "before --run-steps and --screenshot.")) {
    parser.setApplicationDescription(QStringLiteral(
        "Workbench for training DeepSeek-style models.\n"
        "Exit codes: 0 success, 2 invalid input, 3 the run failed."));
    parser.addPositionalArgument(
        QStringLiteral("config"),
        QStringLiteral("Run config or published model config (JSON). Default: %1 here, else the installed one, else "
                       "the built-in tiny preset.")
            .arg(QString::fromLatin1(kWorkingFolderConfig)),
        QStringLiteral("[CONFIG]"));
    for (const QCommandLineOption* option :
         {&run_steps, &grid, &run_queue, &watch, &screenshot, &view, &compare, &store, &remote, &remote_cli, &explore})
        parser.addOption(*option);
}

bool asksOnlyForInformation(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const char* arg = argv[i];
        if (std::strcmp(arg, "--") == 0) return false;
        for (const char* informational : {"-h", "--help", "-?", "--help-all", "-v", "--version"})
            if (std::strcmp(arg, informational) == 0) return true;
    }
    return false;
}

void nameApplication() {
    QCoreApplication::setApplicationName(QStringLiteral("trainbench"));
    QCoreApplication::setApplicationVersion(QStringLiteral(TRAINBENCH_VERSION));
}

QString defaultConfigPath() {
    if (QFileInfo::exists(QString::fromLatin1(kWorkingFolderConfig))) return QString::fromLatin1(kWorkingFolderConfig);
    const QString installed =
        QDir(QCoreApplication::applicationDirPath()).absoluteFilePath(QString::fromLatin1(kInstalledConfig));
    if (QFileInfo::exists(installed)) return QFileInfo(installed).canonicalFilePath();
    return QString();
}

}  // namespace trainbench::gui
