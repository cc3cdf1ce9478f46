// CommandLine: the workbench's options, parsed before any window (or display) is needed.
#pragma once

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QString>
#include <QStringList>

namespace trainbench::gui {

// The size of the window a screenshot captures.
constexpr int kScreenshotWidth = 1280;
constexpr int kScreenshotHeight = 800;

// Every option of `trainbench`, registered on `parser` by the constructor. Parsing needs a
// QCoreApplication (for the program's name in --help), not a QApplication: --help and
// --version answer on machines without a display.
struct CommandLine {
    CommandLine();
    CommandLine(const CommandLine&) = delete;
    CommandLine& operator=(const CommandLine&) = delete;

    QCommandLineParser parser;
    QCommandLineOption help;
    QCommandLineOption version;
    QCommandLineOption run_steps;
    QCommandLineOption grid;
    QCommandLineOption run_queue;
    QCommandLineOption watch;
    QCommandLineOption screenshot;
    QCommandLineOption view;
    QCommandLineOption compare;
    QCommandLineOption store;
    QCommandLineOption remote;
    QCommandLineOption remote_cli;
    QCommandLineOption explore;
};

// Whether the arguments ask only for --help, --help-all or --version (before any "--"): then
// the program answers without starting a GUI.
bool asksOnlyForInformation(int argc, char** argv);

// The name, display name and version every QCoreApplication of the program carries.
void nameApplication();

// The config the window opens without a CONFIG argument: configs/tiny.json in the working
// folder, else the installed one (PREFIX/share/trainbench/configs/tiny.json beside
// PREFIX/bin), else none (the built-in tiny preset).
QString defaultConfigPath();

}  // namespace trainbench::gui
