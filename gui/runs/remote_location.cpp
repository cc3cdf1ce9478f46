// RemoteLocation: a store on another machine, parsed, checked, and the ssh command lines that read it.
#include "runs/remote_location.h"

#include <QCryptographicHash>
#include <QDir>
#include <QRegularExpression>
#include <QStandardPaths>

namespace trainbench::gui {
namespace {

bool hasControlCharacter(const QString& text) {
    for (const QChar c : text)
        if (c.unicode() < 0x20 || c.unicode() == 0x7f || c.category() == QChar::Other_Control) return true;
    return false;
}

// Host names and ssh config aliases; user names. Nothing a shell or ssh would read as syntax.
bool isPlainName(const QString& text) {
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_.][A-Za-z0-9_.-]*$"));
    return plain.match(text).hasMatch();
}

}  // namespace

std::optional<RemoteLocation> RemoteLocation::parse(const QString& text, QString* error) {
    const auto fail = [error](const QString& why) {
        if (error) *error = why;
        return std::optional<RemoteLocation>();
    };
    const QString trimmed = text.trimmed();
    const qsizetype colon = trimmed.indexOf(QLatin1Char(':'));
    if (colon < 0)
        return fail(QStringLiteral("\"%1\" names no store: write [user@]host[:port]:/path/to/store").arg(trimmed));
    RemoteLocation location;
    QString who = trimmed.left(colon);
    QString rest = trimmed.mid(colon + 1);
    const qsizetype at = who.lastIndexOf(QLatin1Char('@'));
    if (at >= 0) {
        location.user = who.left(at);
        who = who.mid(at + 1);
    }
    location.host = who;
    static const QRegularExpression port_then_path(QStringLiteral("^([0-9]+):(.*)$"));
    if (const auto match = port_then_path.match(rest); match.hasMatch()) {
        bool ok = false;
        location.port = match.captured(1).toInt(&ok);
        if (!ok || location.port < 1 || location.port > 65535)
            return fail(QStringLiteral("port %1 is not a TCP port (1 to 65535)").arg(match.captured(1)));
        rest = match.captured(2);
    }
    location.path = rest;
    if (const QString why = location.problem(); !why.isEmpty()) return fail(why);
    return location;
}

QString RemoteLocation::problem() const {
    if (host.isEmpty()) return QStringLiteral("the host is empty: write [user@]host[:port]:/path/to/store");
    if (!isPlainName(host))
        return QStringLiteral("host \"%1\" is not a host name or ssh alias (letters, digits, '.', '_' and '-', not "
                              "first)")
            .arg(host);
    if (!user.isEmpty() && !isPlainName(user))
        return QStringLiteral("user \"%1\" is not a user name (letters, digits, '.', '_' and '-', not first)").arg(user);
    if (port < 0 || port > 65535) return QStringLiteral("port %1 is not a TCP port (1 to 65535)").arg(port);
    if (path.isEmpty()) return QStringLiteral("the store's path is empty: write host:/path/to/store");
    if (hasControlCharacter(path)) return QStringLiteral("the store's path holds a control character");
    // Inside single quotes a backslash is plain to sh and an escape to some other login shells.
    if (path.contains(QLatin1Char('\\')))
        return QStringLiteral("the store's path holds a backslash, which login shells other than sh read differently");
    if (path.startsWith(QLatin1Char('-')))
        return QStringLiteral("the store's path \"%1\" starts with '-', which the CLI would read as an option: write "
                              "./%1")
            .arg(path);
    if (cli.isEmpty()) return QStringLiteral("the CLI's path on the host is empty (trainbench-cli)");
    if (hasControlCharacter(cli) || cli.contains(QLatin1Char('\\')))
        return QStringLiteral("the CLI's path on the host holds a control character or a backslash");
    if (cli.startsWith(QLatin1Char('-'))) return QStringLiteral("the CLI's path on the host starts with '-'");
    return {};
}

QString RemoteLocation::runIdProblem(const QString& run_id) {
    if (run_id.isEmpty()) return QStringLiteral("the run id is empty");
    if (run_id.startsWith(QLatin1Char('-')))
        return QStringLiteral("run id \"%1\" starts with '-', which the CLI would read as an option").arg(run_id);
    // The engine's ids are hex: anything else came from somewhere else, and travels nowhere.
    if (!isPlainName(run_id))
        return QStringLiteral("run id \"%1\" is not a run id (letters, digits, '.', '_' and '-')").arg(run_id);
    return {};
}

QString RemoteLocation::label() const {
    QString text = user.isEmpty() ? host : user + QLatin1Char('@') + host;
    if (port > 0) text += QLatin1Char(':') + QString::number(port);
    return text + QLatin1Char(':') + path;
}

QString RemoteLocation::hostLabel() const {
    return user.isEmpty() ? host : user + QLatin1Char('@') + host;
}

QString RemoteLocation::sshProgram() {
    const QString stand_in = qEnvironmentVariable("TRAINBENCH_SSH");
    return stand_in.isEmpty() ? QStringLiteral("ssh") : stand_in;
}

QStringList RemoteLocation::sshArguments(const QStringList& remote_arguments) const {
    // BatchMode: a key or the agent, never a prompt (there is no terminal to answer it).
    // ServerAlive: a connection that died silently (a laptop's sleep) ends ssh within ~45 s.
    // LogLevel=ERROR: no banner on stderr, where a word in it could read as a refusal.
    QStringList arguments{QStringLiteral("-o"), QStringLiteral("BatchMode=yes"),
                          QStringLiteral("-o"), QStringLiteral("LogLevel=ERROR"),
                          QStringLiteral("-o"), QStringLiteral("ConnectTimeout=15"),
                          QStringLiteral("-o"), QStringLiteral("ServerAliveInterval=15"),
                          QStringLiteral("-o"), QStringLiteral("ServerAliveCountMax=3")};
    if (port > 0) arguments << QStringLiteral("-p") << QString::number(port);
    if (!user.isEmpty()) arguments << QStringLiteral("-l") << user;
    // After "--" nothing is an option of ssh's, whatever it starts with.
    arguments << QStringLiteral("--") << host << remoteCommand(remote_arguments);
    return arguments;
}

QString RemoteLocation::remoteCommand(const QStringList& remote_arguments) const {
    QStringList words{shellQuoted(cli)};
    for (const QString& argument : remote_arguments) words << shellQuoted(argument);
    return words.join(QLatin1Char(' '));
}

QString RemoteLocation::cacheFolder() const {
    QString base = qEnvironmentVariable("TRAINBENCH_REMOTE_CACHE");
    if (base.isEmpty())
        base = QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation) + QStringLiteral("/trainbench/remote");
    // Readable, and unique per host and path (two stores on one host are two caches).
    const QString identity = hostLabel() + QLatin1Char(':') + QString::number(port) + QLatin1Char(':') + path;
    const QByteArray digest = QCryptographicHash::hash(identity.toUtf8(), QCryptographicHash::Sha256).toHex().left(12);
    return QDir(base).filePath(hostLabel() + QLatin1Char('-') + QString::fromLatin1(digest));
}

QString sshRefusal(const RemoteLocation& location, int exit_code, const QString& errors) {
    const QString host = location.hostLabel();
    const QString said = lastErrorLine(errors);
    if (exit_code == 255) {
        if (errors.contains(QStringLiteral("Host key verification failed")))
            return QStringLiteral("ssh does not know %1's host key: connect once from a terminal (ssh %1) to check "
                                  "and accept it, then try again")
                .arg(host);
        // ssh's own words when BatchMode found no key it may use.
        static const QRegularExpression needs_secret(
            QStringLiteral("Permission denied \\(|Too many authentication failures|passphrase for key"));
        if (needs_secret.match(errors).hasMatch())
            return QStringLiteral("ssh to %1 needs a password or passphrase, which the workbench never asks for: load "
                                  "a key into your agent (ssh-add) or set up key login (ssh-copy-id %1), then try "
                                  "again. ssh said: %2")
                .arg(host, said);
        return {};
    }
    if (exit_code == 126)
        return QStringLiteral("%1 on %2 cannot be run (not executable): check the store's CLI path. The shell said: %3")
            .arg(location.cli, host, said);
    if (exit_code == 127)
        return QStringLiteral("%1 is not found on %2 (the PATH of a non-interactive shell): give its full path as the "
                              "store's CLI. The shell said: %3")
            .arg(location.cli, host, said);
    // Invalid input (the run or the store), unless the store was only busy: that passes.
    if (exit_code == 2 && !errors.contains(QStringLiteral("locked")) && !errors.contains(QStringLiteral("busy")))
        return QStringLiteral("trainbench-cli on %1 refused: %2").arg(host, said);
    return {};
}

QString sshStartFailure(const QString& error_string) {
    return QStringLiteral("cannot run %1 (%2): install OpenSSH's client, or name the program in TRAINBENCH_SSH")
        .arg(RemoteLocation::sshProgram(), error_string);
}

QString lastErrorLine(const QString& errors) {
    const QStringList lines = errors.trimmed().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    return lines.isEmpty() ? QString() : lines.back().trimmed();
}

QString shellQuoted(const QString& text) {
    // A path under the remote home keeps its "~/" outside the quotes, where the shell expands it.
    if (text.startsWith(QStringLiteral("~/"))) return QStringLiteral("~/") + shellQuoted(text.mid(2));
    QString quoted = text;
    quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
    return QLatin1Char('\'') + quoted + QLatin1Char('\'');
}

}  // namespace trainbench::gui
