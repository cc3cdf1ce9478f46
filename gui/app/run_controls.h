// RunControls: Start, Pause and Stop (buttons and menu actions) and the phase of the window's own run that decides what they allow.
#pragma once

#include <functional>

#include <QObject>
#include <QString>

#include "trainbench/run_config.h"

class QAction;
class QGroupBox;
class QPushButton;
class QWidget;

namespace trainbench::gui {

class EngineBridge;
class RunDashboard;

// The phase is finer than RunStatus because a request (pause, resume, stop) takes effect at
// the next micro-batch boundary, and the controls must not invite a second request meanwhile:
//
//   Idle/Finished --started--> Running --togglePause--> Pausing --bridge "paused"--> Paused
//   Running/Pausing/Paused --stop--> Stopping --runFinished--> Finished
//   Pausing/Paused --togglePause--> Running;   a refused start: back to Idle (or Finished)
//
// The bridge's statusChanged, runFinished and startFailed move the phase; the dashboard says
// what the run is doing (the status line). Start itself belongs to the window, which decides
// what starts (startRequested); the window answers through `start_gate` what else keeps Start
// off. Object names tests find: startButton, pauseButton, stopButton, startAction,
// pauseAction, stopAction.
class RunControls : public QObject {
    Q_OBJECT

public:
    enum class Phase { Idle, Running, Pausing, Paused, Stopping, Finished };

    // What keeps Start off, or changes what it says, besides a live run.
    struct StartGate {
        bool exploring = false;  // the batch explorer trains on the same cores
        QString refusal;         // why the config does not fit this machine, or empty
        QString watched_run;     // the run watched on the Training tab, or empty
    };

    // Connects to `bridge` at once: callers that connect later see the phase already moved
    // when the bridge's signals reach them.
    RunControls(EngineBridge* bridge, RunDashboard* dashboard, std::function<StartGate()> start_gate,
                QObject* parent);

    // The Run box: the three buttons over the dashboard's status line and progress bar.
    QGroupBox* buildRunBox(QWidget* parent);
    QAction* startAction() const { return start_action_; }
    QAction* pauseAction() const { return pause_action_; }
    QAction* stopAction() const { return stop_action_; }

    Phase phase() const { return phase_; }
    static bool isLive(Phase phase);
    bool isLive() const { return isLive(phase_); }
    // Enables and names the controls for `phase`; phaseChanged lets the window lock the rest.
    void setPhase(Phase phase);

    // The bridge has taken `config` (shown as `config_name`): the log says what the run will
    // train, the phase is Running and the status line says the model is being built.
    void started(const RunConfig& config, const QString& config_name);
    // Pause while running; resume while pausing or paused.
    void togglePause();
    void stop();
    // Start's state, tooltip and text from the phase and the window's StartGate.
    void updateStartButton();

Q_SIGNALS:
    // The Start button or action: the window decides what starts.
    void startRequested();
    // Emitted by setPhase before the controls are updated.
    void phaseChanged(Phase phase);

private:
    void onStatus(const QString& status);
    void onStartFailed(const QString& message);
    void logStart(const RunConfig& config, const QString& config_name);

    EngineBridge* bridge_ = nullptr;
    RunDashboard* dashboard_ = nullptr;
    std::function<StartGate()> start_gate_;
    Phase phase_ = Phase::Idle;

    QAction* start_action_ = nullptr;
    QAction* pause_action_ = nullptr;
    QAction* stop_action_ = nullptr;
    QPushButton* start_button_ = nullptr;
    QPushButton* pause_button_ = nullptr;
    QPushButton* stop_button_ = nullptr;
};

}  // namespace trainbench::gui
