// A run stopped mid-way and resumed from what the stop left: for the layouts whose stops are
// agreed at a window's end (sharded state, expert parallelism).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "trainbench/checkpoints.h"
#include "trainbench/training_session.h"

namespace trainbench {

// Trains `config` (its steps far beyond reach) until three steps are done and stops it; the
// stop must end the run Stopped with a checkpoint at the steps it completed, from which two more
// steps must train and log their losses. Empty when all of that held, else what did not.
inline std::string stopAndResume(RunConfig config) {
    config.train.steps = 100000;
    QTemporaryDir dir;
    SessionOptions options;
    options.checkpoint_dir = dir.path().toStdString();
    TrainingSession session(config, options);
    session.start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (session.completedSteps() < 3 && std::chrono::steady_clock::now() < deadline) QTest::qWait(20);
    const bool reached = session.completedSteps() >= 3;
    session.stop();
    if (!reached) {
        session.wait(std::chrono::seconds(60));
        return "three steps not done within a minute";
    }
    if (!session.wait(std::chrono::seconds(60))) return "the stopped run did not end";
    if (session.summary().status != RunStatus::Stopped)
        return std::string("the run ended ") + runStatusName(session.summary().status) + ": " + session.summary().error;
    std::vector<std::string> skipped;
    const auto checkpoint = checkpointToResume(options.checkpoint_dir, skipped);
    if (!checkpoint) return "the stop left no checkpoint";
    if (checkpoint->step != session.summary().steps)
        return "the checkpoint is of step " + std::to_string(checkpoint->step) + ", the run stopped after " +
               std::to_string(session.summary().steps);
    SessionOptions resume;
    resume.resume_from = checkpoint->path;
    config.train.steps = checkpoint->step + 2;
    TrainingSession more(config, resume);
    auto inbox = more.bus().subscribe();
    more.start();
    if (!more.wait(std::chrono::minutes(2))) return "the resumed run did not end";
    if (more.summary().status != RunStatus::Completed) return "the resumed run failed: " + more.summary().error;
    size_t losses = 0;
    for (const auto& p : inbox->drain().points) losses += p.key == "train/loss" ? 1 : 0;
    return losses == 2 ? std::string() : "the resumed run logged " + std::to_string(losses) + " losses, not 2";
}

}  // namespace trainbench
