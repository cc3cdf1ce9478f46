// What a run event is about (RunEvent::kind holds its name, as the store keeps it).
#pragma once

#include <optional>
#include <string_view>

namespace trainbench {

enum class EventKind {
    Status,            // created, running, paused, completed, stopped, failed (with the reason)
    Warning,           // something the user should know that changes nothing (memory sampling failed)
    Precision,         // what runtime.dtype auto chose, and why
    OutOfMemoryBackoff,  // a window ran out of memory: the micro-batch halved, the step redone
    BatchChange,       // a ramp or the adaptive batch changed the global batch
    SkippedStep,       // a non-finite step skipped
    Checkpoint,        // a checkpoint written (its folder)
    CheckpointFailed,  // a checkpoint could not be written; training went on
    Advice,            // a live detector's advice (a loss spike, imbalance, slow throughput, ...)
    StoreUnwritable,   // training held: the run store cannot be written
    StoreWritable,     // the store accepts writes again
    Sample,            // text the model wrote at this step (train.sample_every; trainbench/run_sample.h)
};

// The name in RunEvent::kind ("status", "oom_backoff", ...).
const char* eventKindName(EventKind kind);
// The kind of a name, nothing for a name no version of the engine writes.
std::optional<EventKind> eventKindNamed(std::string_view name);

}  // namespace trainbench

// Floor: metrics/ (engine/README.md)
