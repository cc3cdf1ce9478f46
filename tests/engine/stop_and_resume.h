// A run stopped mid-way and resumed from what the stop left: for the layouts whose stops are
// agreed at a window's end (sharded state, expert parallelism).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "model/safetensors.h"
#include "trainbench/checkpoints.h"
#include "trainbench/training_session.h"

namespace trainbench {

// Trains `config` with `options` to its end; the losses it logged, in step order, in `losses`.
// Empty when it completed, else what went wrong (`what` names the run).
inline std::string trainToEnd(const RunConfig& config, const SessionOptions& options, const std::string& what,
                              std::vector<double>& losses) {
    TrainingSession session(config, options);
    auto inbox = session.bus().subscribe();
    session.start();
    if (!session.wait(std::chrono::minutes(2))) return what + " did not end";
    if (session.summary().status != RunStatus::Completed) return what + " failed: " + session.summary().error;
    for (const auto& p : inbox->drain().points)
        if (p.key == "train/loss") losses.push_back(p.value);
    return {};
}

// The tensors of two checkpoints' files of one name, compared by name, bit for bit. Empty when
// equal, else the first difference.
inline std::string sameCheckpointFile(const std::string& a, const std::string& b, const std::string& file) {
    const NamedTensors left = readSafetensors(a + "/" + file), right = readSafetensors(b + "/" + file);
    if (left.size() != right.size()) return file + ": " + std::to_string(left.size()) + " against " +
                                            std::to_string(right.size()) + " tensors";
    for (size_t i = 0; i < left.size(); ++i) {
        if (left[i].first != right[i].first) return file + ": " + left[i].first + " against " + right[i].first;
        if (!torch::equal(left[i].second, right[i].second)) return file + ": " + left[i].first + " differs";
    }
    return {};
}

// Trains `config` (its steps far beyond reach, a constant learning rate so that the schedule
// does not depend on train.steps) until three steps are done and stops it; the stop must end the
// run Stopped with a checkpoint at the steps it completed. From it two more steps must train to
// the uninterrupted run's numbers bit for bit: the same two losses, and the same weights and
// optimizer state in the checkpoints both write at their end (a wrongly gathered moment or
// shard would show there). Empty when all of that held, else what did not.
inline std::string stopAndResume(RunConfig config) {
    config.train.steps = 100000;
    config.train.schedule = "constant";
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
    config.train.steps = checkpoint->step + 2;

    QTemporaryDir resumed_dir, whole_dir;
    SessionOptions resume;
    resume.resume_from = checkpoint->path;
    resume.checkpoint_dir = resumed_dir.path().toStdString();
    std::vector<double> resumed, losses;
    if (std::string problem = trainToEnd(config, resume, "the resumed run", resumed); !problem.empty()) return problem;
    if (resumed.size() != 2) return "the resumed run logged " + std::to_string(resumed.size()) + " losses, not 2";

    SessionOptions whole_options;
    whole_options.checkpoint_dir = whole_dir.path().toStdString();
    if (std::string problem = trainToEnd(config, whole_options, "the uninterrupted run", losses); !problem.empty())
        return problem;
    if (losses.size() != size_t(config.train.steps))
        return "the uninterrupted run logged " + std::to_string(losses.size()) + " losses";
    for (size_t i = 0; i < 2; ++i)
        if (resumed[i] != losses[losses.size() - 2 + i])
            return "step " + std::to_string(checkpoint->step + 1 + int64_t(i)) + ": resumed loss " +
                   std::to_string(resumed[i]) + ", uninterrupted " + std::to_string(losses[losses.size() - 2 + i]);
    const CheckpointInfo resumed_end = checkpointOfStep(resume.checkpoint_dir, config.train.steps);
    const CheckpointInfo whole_end = checkpointOfStep(whole_options.checkpoint_dir, config.train.steps);
    for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
        const std::string problem = sameCheckpointFile(resumed_end.path, whole_end.path, file);
        if (!problem.empty()) return "at step " + std::to_string(config.train.steps) + ", " + problem;
    }
    return {};
}

}  // namespace trainbench
