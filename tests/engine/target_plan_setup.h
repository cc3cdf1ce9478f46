// The planner suites' set-up: the tiny model counted by hand, the tiny model and the published
// configs on named targets, and a relative comparison (test_target_plan, test_window_plan).
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include "trainbench/config_io.h"
#include "trainbench/presets.h"
#include "trainbench/run_config.h"

namespace trainbench {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// configs/tiny.json counted by hand: d 64, vocab 64, 4 heads of qk 16 + 8 and v 16, q and kv
// LoRA 32, one dense block (inter 128) and one MoE block (8 routed experts of 32, 1 shared, 2
// active, a gate with a bias).
//   attention: 64*32 + 32 + 32*4*24 + 64*(32+8) + 32 + 32*4*(16+16) + 4*16*64 = 15,936
//   dense block: 15,936 + 2*64 + 3*64*128 = 40,640
//   MoE block: 15,936 + 2*64 + (8*64 + 8) + 9 * 3*64*32 = 71,880 (71,872 without the bias buffer)
//   total: 2*64*64 + 64 + 40,640 + 71,880 = 120,776; activated: the MoE block with 3 experts = 83,912
constexpr int64_t kTinyParams = 120776;
constexpr int64_t kTinyActivated = 83912;
constexpr int64_t kTinyLargestUnit = 71872;

inline RunConfig tinyOn(const char* kind, int64_t devices) {
    RunConfig c = builtinTinyConfig();
    c.target.kind = kind;
    c.target.devices = devices;
    c.runtime.dtype = "bf16";
    c.train.micro_batch_size = 8;
    c.train.gradient_accumulation_steps = 2;
    return c;
}

inline RunConfig published(const char* name) {
    RunConfig c = loadRunConfigFile(std::string(TRAINBENCH_SOURCE_DIR) + "/configs/deepseek/" + name);
    c.runtime.dtype = "bf16";
    c.train.seq_len = 4096;
    c.train.micro_batch_size = 1;
    return c;
}

// A published config with K micro-batches a step on `devices` H100 80 GB.
inline RunConfig publishedOnH100s(const char* name, int64_t K, int64_t devices) {
    RunConfig c = published(name);
    c.train.gradient_accumulation_steps = K;
    c.target.kind = "h100-80";
    c.target.devices = devices;
    return c;
}

inline bool near(double a, double b, double relative = 1e-12) { return std::fabs(a - b) <= relative * std::fabs(b); }

// The tiny model on `devices` H100s at stage 3 with everything offloaded (its batch per device).
inline RunConfig tinyOffloadingAll(int64_t devices) {
    RunConfig c = tinyOn("h100-80", devices);
    c.train.global_batch_size = std::nullopt;
    c.runtime.zero_stage = 3;
    c.runtime.offload = "all";
    return c;
}


}  // namespace trainbench
