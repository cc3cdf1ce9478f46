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

// 64 prompt/completion pairs as JSON Lines: prompts of 1 to 12 letters, completions of 0 to 8
// (an empty one has its end byte as its one target), so the rows, micro-batches and ranks
// count very different numbers of targets and some prompts fill a whole window.
inline std::string writePairCorpus(const QTemporaryDir& dir) {
    const std::string path = dir.filePath("pairs.jsonl").toStdString();
    std::ofstream out(path);
    std::mt19937 engine(7);
    const auto letters = [&](int count) {
        std::string s;
        for (int i = 0; i < count; ++i) s += char('a' + engine() % 26);
        return s;
    };
    for (int doc = 0; doc < 64; ++doc) {
        const std::string prompt = letters(1 + static_cast<int>(engine() % 12));
        const std::string completion = letters(static_cast<int>(engine() % 9));
        out << "{\"prompt\": \"" << prompt << "\", \"completion\": \"" << completion << "\"}\n";
    }
    return path;
}

// The conformance config on the pairs (byte vocabulary; `layout` packed or padded).
inline RunConfig pairConfig(const std::string& corpus, const std::string& layout) {
    RunConfig c = raggedTextConfig(corpus);
    c.data.source = "jsonl";
    c.data.prompt_field = "prompt";
    c.data.completion_field = "completion";
    c.data.layout = layout;
    return c;
}

}  // namespace trainbench
