// A sample: text the model wrote during training (train.sample_every), kept in the run store as
// an event of kind "sample" at its step, so it is stored, followed live and removed on a resume
// with the other events. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainbench/metric_point.h"

namespace trainbench {

struct RunSample {
    int64_t step = 0;
    std::string prompt;      // empty: a sample from the start of a document
    std::string completion;  // the new text, without the end token
    bool ended = false;      // stopped at the end token (else at train.sample_tokens)
};

// The event's message: one JSON object {"prompt", "completion", "ended"} (bytes that are not
// UTF-8 replaced).
std::string sampleEventMessage(const RunSample& sample);
// The sample an event carries; nothing for another kind or a message that is not one.
std::optional<RunSample> sampleOfEvent(const RunEvent& event);

}  // namespace trainbench

// Floor: metrics/ (engine/README.md)
