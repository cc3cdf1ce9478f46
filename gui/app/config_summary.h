// ConfigSummary: the key numbers of a run config as the text the workbench shows.
#pragma once

#include <cstdint>

#include <QString>

#include "trainbench/run_config.h"

namespace trainbench::gui {

// Display strings only; the numbers themselves come from RunConfig and countParameters.
struct ConfigSummary {
    QString total_params;     // "1.23 M"
    QString activated_params; // "0.85 M (69 %)"
    QString model_shape;      // "2 layers · dim 64 · 8 experts, 2 active"
    QString batch_equation;   // "m 8 × K 2 × W 1 = B 16 sequences"
    QString tokens_per_step;  // "1,024"
    QString seq_len;
    QString steps;
    QString learning_rate;    // "0.003 → 0.0003"
    QString schedule;         // "cosine, 10 warmup steps"
    QString device;           // "cpu · fp32"
    QString target;           // "8 x H100 80 GB" (the target section's machine); empty for this machine
};

ConfigSummary summarizeConfig(const RunConfig& config);

}  // namespace trainbench::gui
