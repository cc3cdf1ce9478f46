// RemoteRunsLister: `runs --json` of a remote store over ssh, parsed into run records.
#include "runs/remote_runs_lister.h"

#include <cmath>
#include <stdexcept>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

namespace trainbench::gui {

RemoteRunsLister::RemoteRunsLister(RemoteLocation location, QObject* parent)
    : QObject(parent), location_(std::move(location)) {}

RemoteRunsLister::~RemoteRunsLister() {
    if (!process_) return;
    process_->disconnect(this);
    process_->kill();
    process_->waitForFinished(2000);
}

void RemoteRunsLister::refresh() {
    if (process_) return;
    if (const QString why = location_.problem(); !why.isEmpty()) {
        Q_EMIT failed(why);
        return;
    }
    process_ = new QProcess(this);
    process_->setProgram(RemoteLocation::sshProgram());
    process_->setArguments(location_.sshArguments(
        {QStringLiteral("runs"), QStringLiteral("--store"), location_.path, QStringLiteral("--json")}));
    connect(process_, &QProcess::finished, this, [this](int exit_code, QProcess::ExitStatus status) {
        onFinished(exit_code, status == QProcess::CrashExit);
    });
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart) return;
        const QString why = process_->errorString();
        process_->deleteLater();
        process_ = nullptr;
        Q_EMIT failed(sshStartFailure(why));
    });
    process_->start(QIODevice::ReadOnly);
}

void RemoteRunsLister::onFinished(int exit_code, bool crashed) {
    const QByteArray out = process_->readAllStandardOutput();
    const QString errors = QString::fromUtf8(process_->readAllStandardError());
    process_->deleteLater();
    process_ = nullptr;
    const QString host = location_.hostLabel();
    if (crashed || exit_code != 0) {
        QString why = crashed ? QString() : sshRefusal(location_, exit_code, errors);
        if (why.isEmpty())
            why = tr("cannot list the runs on %1 (%2)")
                      .arg(host, lastErrorLine(errors).isEmpty() ? tr("exit %1").arg(exit_code) : lastErrorLine(errors));
        Q_EMIT failed(why);
        return;
    }
    try {
        Q_EMIT listed(parseListing(out));
    } catch (const std::exception& error) {
        Q_EMIT failed(tr("the runs listed by %1 on %2 cannot be read: %3")
                          .arg(location_.cli, host, QString::fromStdString(error.what())));
    }
}

std::vector<RunRecord> RemoteRunsLister::parseListing(const QByteArray& json) {
    QJsonParseError error{};
    const QJsonDocument document = QJsonDocument::fromJson(json.trimmed(), &error);
    if (error.error != QJsonParseError::NoError)
        throw std::runtime_error("not JSON (" + error.errorString().toStdString() + ")");
    if (!document.isArray()) throw std::runtime_error("not a JSON array of runs");
    std::vector<RunRecord> runs;
    for (const QJsonValue& value : document.array()) {
        const QJsonObject row = value.toObject();
        if (!row.value(QStringLiteral("run_id")).isString() || row.value(QStringLiteral("run_id")).toString().isEmpty())
            throw std::runtime_error("a run without a run_id");
        // An id that could not have come from the engine is not followed anywhere.
        if (const QString why = RemoteLocation::runIdProblem(row.value(QStringLiteral("run_id")).toString());
            !why.isEmpty())
            throw std::runtime_error(why.toStdString());
        RunRecord run;
        run.run_id = row.value(QStringLiteral("run_id")).toString().toStdString();
        run.name = row.value(QStringLiteral("name")).toString().toStdString();
        run.status = row.value(QStringLiteral("status")).toString().toStdString();
        run.steps = row.value(QStringLiteral("steps")).toInteger();
        const QJsonValue loss = row.value(QStringLiteral("final_loss"));
        if (loss.isDouble() && std::isfinite(loss.toDouble())) run.final_loss = loss.toDouble();
        run.created = row.value(QStringLiteral("created")).toString().toStdString();
        run.tags = row.value(QStringLiteral("tags")).toString().toStdString();
        runs.push_back(std::move(run));
    }
    return runs;
}

}  // namespace trainbench::gui
