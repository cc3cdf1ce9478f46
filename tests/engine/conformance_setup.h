// What the conformance suites (accumulation, sharding) train: the tiny test model on a short
// schedule that clips, its batch splits, and a ragged text corpus whose rows count different
// numbers of targets (docs/design/accumulation.md).
#pragma once

#include <QTemporaryDir>

#include <fstream>
#include <random>
#include <string>

#include "tiny_model.h"

namespace trainbench {

inline RunConfig conformanceConfig() {
    RunConfig c;
    c.model = tinyTestModel(32, 32);
    c.model.init_std = 0.05;
    c.model.bias_update_speed = 0.01;
    c.train.seq_len = 16;
    c.train.steps = 4;
    c.train.lr = 3e-3;
    c.train.min_lr = 3e-4;
    c.train.warmup_steps = 2;
    c.train.grad_clip = 0.5;  // small, so clipping really happens
    c.runtime.threads = 1;
    return c;
}

inline RunConfig withSplit(RunConfig c, int64_t m, int64_t K, int64_t W) {
    c.train.micro_batch_size = m;
    c.train.gradient_accumulation_steps = K;
    c.runtime.world_size = W;
    return c;
}

// Documents of 1 to 20 letters, 64 of them, one per row with padding when the layout is
// "padded": micro-batches and ranks hold different numbers of counted targets.
inline std::string writeRaggedCorpus(const QTemporaryDir& dir) {
    const std::string path = dir.filePath("corpus.txt").toStdString();
    std::ofstream out(path);
    std::mt19937 engine(42);
    for (int doc = 0; doc < 64; ++doc) {
        const int length = 1 + static_cast<int>(engine() % 20);
        for (int i = 0; i < length; ++i) out << char('a' + engine() % 26);
        out << "\n\n";
    }
    return path;
}

// The conformance config on the ragged corpus (byte vocabulary, padded rows).
inline RunConfig raggedTextConfig(const std::string& corpus) {
    RunConfig c = conformanceConfig();
    c.model.vocab_size = 256;
    c.data.source = "text";
    c.data.path = corpus;
    c.data.layout = "padded";
    c.data.val_fraction = 0.1;
    return c;
}

}  // namespace trainbench
