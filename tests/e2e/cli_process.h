// What the end-to-end suites share: trainbench-cli run as a child process, and its output read.
#pragma once

#include <QJsonDocument>
#include <QJsonObject>
#include <QElapsedTimer>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTest>

#include <string>

#include "trainbench/run_store.h"

namespace trainbench {

inline const QString kCli = QStringLiteral(TRAINBENCH_CLI_PATH);
inline const QString kConfigs = QStringLiteral(TRAINBENCH_SOURCE_DIR "/configs");

struct Result {
    int code = -1;
    QString out, err;
};

inline Result runCli(const QStringList& args, int timeout_ms = 120000) {
    QProcess process;
    process.start(kCli, args);
    process.waitForFinished(timeout_ms);
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
            QString::fromUtf8(process.readAllStandardOutput()), QString::fromUtf8(process.readAllStandardError())};
}

// The last line of a command's output as a JSON object (the summary line of `run`).
inline QJsonObject lastJsonLine(const QString& text) {
    const auto lines = text.trimmed().split('\n');
    return QJsonDocument::fromJson(lines.last().toUtf8()).object();
}

// Waits up to `timeout_ms` for the store in `folder` to hold a run other than `other_id` that
// has recorded `steps` steps; its id, or "" when none did in time.
inline std::string waitForRun(const QString& folder, const std::string& other_id, int64_t steps,
                              int timeout_ms = 120000) {
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < timeout_ms) {
        RunStore reader(folder.toStdString());
        for (const auto& r : reader.listRuns())
            if (r.run_id != other_id && r.steps >= steps) return r.run_id;
        QTest::qWait(100);
    }
    return "";
}

}  // namespace trainbench
