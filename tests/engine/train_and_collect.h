// A whole run through a TrainingSession, and the series of its logged points the suites compare.
#pragma once

#include <QtGlobal>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "trainbench/training_session.h"

namespace trainbench {

struct Series {
    std::vector<double> loss, grad_norm, lr, collectives;
    // Multi-token prediction (model.n_mtp_depth): each depth's loss, mtp_loss[k - 1], and lambda.
    std::vector<std::vector<double>> mtp_loss;
    std::vector<double> mtp_weight;
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
        if (p.key == "train/mtp_weight") s.mtp_weight.push_back(p.value);
        if (p.key.rfind("train/mtp_loss/", 0) == 0) {
            const size_t depth = std::stoul(p.key.substr(15));
            if (s.mtp_loss.size() < depth) s.mtp_loss.resize(depth);
            s.mtp_loss[depth - 1].push_back(p.value);
        }
    }
    return s;
}

inline double relativeDifference(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

// The largest relative difference of `a` to `b` over the steps, and whether any step differs at all
// (a comparison that must not pass because nothing changed).
inline std::pair<double, bool> worstDifference(const std::vector<double>& a, const std::vector<double>& b) {
    double worst = 0;
    bool differs = false;
    for (size_t i = 0; i < b.size(); ++i) {
        worst = std::max(worst, relativeDifference(a[i], b[i]));
        differs = differs || a[i] != b[i];
    }
    return {worst, differs};
}

}  // namespace trainbench
