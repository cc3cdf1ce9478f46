// TensorBoard's Event messages in protobuf's wire format, encoded by hand: the three this engine
// writes (the file version, a scalar, a text summary).
//
// Why by hand: Debian's libsentencepiece (the tokenizer's) carries its own protobuf-lite and
// exports all of its symbols, so Debian's libprotobuf cannot share a process with it (its
// MessageLite calls bind to the other copy and crash). The messages are small and fixed.
//
// Field numbers (TensorBoard's tensorboard/compat/proto/*.proto):
//   Event:      wall_time double 1, step int64 2, file_version string 3, summary Summary 5,
//               session_log SessionLog 7
//   SessionLog: status enum 1 (START = 1)
//   Summary:    value repeated Value 1
//   Value:      tag string 1, simple_value float 2, tensor TensorProto 8, metadata SummaryMetadata 9
//   SummaryMetadata: plugin_data PluginData 1;  PluginData: plugin_name string 1
//   TensorProto: dtype DataType 1 (DT_STRING = 7), tensor_shape TensorShapeProto 2 (no dim: a
//                scalar), string_val repeated bytes 8
// Fields are written in field-number order and proto3 defaults (a step or wall time of 0) are
// left out, as protoc's serializer does.
#pragma once

#include <cstdint>
#include <string>

namespace trainbench::tensorboard {

// The first record of every file: {wall_time, file_version: "brain.Event:2"}. Version 2 tells
// readers that a step going back is not a restart (they keep what came before).
std::string fileVersionEvent(double wall_time);
std::string scalarEvent(const std::string& tag, int64_t step, double wall_time, float value);
// A text summary: the text plugin's metadata and a scalar string tensor (rendered as Markdown).
std::string textEvent(const std::string& tag, int64_t step, double wall_time, const std::string& text);
// {wall_time, step, session_log: {status: START}}: a session begins at `step`. From the second
// of a run on, TensorBoard's server drops what it read before with a step >= `step` (what a
// killed process wrote after its last checkpoint); the first is the run's start.
std::string sessionStartEvent(int64_t step, double wall_time);

}  // namespace trainbench::tensorboard
