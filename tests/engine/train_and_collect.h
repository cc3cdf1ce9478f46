// A whole run through a TrainingSession, and the series of its logged points the suites compare.
#pragma once

#include <QtGlobal>

#include <chrono>
#include <vector>

#include "trainbench/training_session.h"

namespace trainbench {

struct Series {
    std::vector<double> loss, grad_norm, lr, collectives;
};

// Trains `config` to its end (fatal if it fails or takes over ten minutes).
inline Series trainAndCollect(const RunConfig& config) {
    TrainingSession session(config);
    auto inbox = session.bus().subscribe();
    session.start();
    if (!session.wait(std::chrono::minutes(10))) qFatal("run did not finish");
    if (session.status() != RunStatus::Completed)
        qFatal("run ended %s: %s", runStatusName(session.status()), session.summary().error.c_str());
    Series s;
    for (const auto& p : inbox->drain().points) {
        if (p.key == "train/loss") s.loss.push_back(p.value);
        if (p.key == "train/grad_norm") s.grad_norm.push_back(p.value);
        if (p.key == "train/lr") s.lr.push_back(p.value);
        if (p.key == "comm/collectives") s.collectives.push_back(p.value);
    }
    return s;
}

}  // namespace trainbench
