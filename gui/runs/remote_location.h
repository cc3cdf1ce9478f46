// RemoteLocation: a run store on another machine, reached through the user's own ssh, and the command lines that read it.
#pragma once

#include <optional>

#include <QString>
#include <QStringList>

namespace trainbench::gui {

// `[user@]host[:port]:/path/to/store` names a store on another machine. The workbench reads it
// by running `trainbench-cli runs --json` and `trainbench-cli follow … --json` there through
// the user's OpenSSH client (their keys, agent, ~/.ssh/config, ProxyJump), with BatchMode so no
// password ever passes through the workbench.
//
// Nothing the user typed reaches a shell unquoted: ssh joins its command arguments into one
// line the remote shell reads, so each argument is single-quoted for it (shellQuoted), and
// whatever would still be read as something else is refused: control characters anywhere (a
// newline ends the remote command), a leading '-' (an option to ssh or to the CLI), a backslash
// in a path (an escape inside single quotes to some login shells), a run id that is not a plain
// name (the engine's are hex).
struct RemoteLocation {
    QString user;  // empty: ssh's default (~/.ssh/config, then the local user)
    QString host;
    int port = 0;  // 0: ssh's default
    QString path;  // the store folder on the host
    // The CLI on the host: a non-interactive shell's PATH often lacks a user's own bin folder.
    QString cli = QStringLiteral("trainbench-cli");

    // Parses `[user@]host[:port]:/path`; empty with `error` saying what is wrong.
    static std::optional<RemoteLocation> parse(const QString& text, QString* error);
    // Why these fields cannot be used (empty: they can).
    QString problem() const;
    // Why `run_id` cannot travel to the host (empty: it can).
    static QString runIdProblem(const QString& run_id);

    // `[user@]host[:port]:/path`, as parse() reads it: the location's name in lists and settings.
    QString label() const;
    // `[user@]host`: what marks its runs in the runs list.
    QString hostLabel() const;

    // The ssh program: TRAINBENCH_SSH when set (tests set a stand-in), else `ssh` on the PATH.
    static QString sshProgram();
    // ssh's arguments to run `remote_arguments` (the CLI's, after the CLI itself) on the host.
    QStringList sshArguments(const QStringList& remote_arguments) const;
    // The command line the remote shell reads: the CLI and `remote_arguments`, each quoted.
    QString remoteCommand(const QStringList& remote_arguments) const;

    // The folder under the user's cache that keeps this location's runs as a store of their
    // own (TRAINBENCH_REMOTE_CACHE replaces the cache's remote/ folder, for tests).
    QString cacheFolder() const;

    bool operator==(const RemoteLocation&) const = default;
};

// Why a command over ssh failed in a way another try will not mend, from its exit code and
// stderr: ssh refused without a password or passphrase (BatchMode) or does not know the
// host's key (255), the CLI cannot run (126) or is not on the host (127), the CLI refused its
// input (2, not a busy store). Empty for what may pass (the network: refused, timed out, cut),
// which is worth retrying.
QString sshRefusal(const RemoteLocation& location, int exit_code, const QString& errors);
// Why the ssh program could not be started (QProcess's `error_string`), and how to mend it.
QString sshStartFailure(const QString& error_string);
// The last line a command wrote to stderr: what a message quotes.
QString lastErrorLine(const QString& errors);

// `text` as one word of a POSIX shell: in single quotes, a quote inside written '\''; a
// leading "~/" stays outside them, so a path under the remote home is expanded there.
QString shellQuoted(const QString& text);

}  // namespace trainbench::gui
