// safetensors files: an 8-byte little-endian header length, a JSON header, raw little-endian data.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "model/safetensors_header.h"

namespace trainbench {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Writes the tensors (copied to CPU, contiguous, dtype kept) atomically: a temporary file in the
// same folder, fsynced, then renamed over `path`. Throws std::runtime_error on I/O failure.
void writeSafetensors(const std::string& path, const NamedTensors& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata = {});

// Reads every tensor. Throws ConfigError naming the file and what is wrong (truncated,
// bad header, offsets outside the data, unsupported dtype).
NamedTensors readSafetensors(const std::string& path);
// Only the header's entries (names, dtypes, shapes), checked the same way.
std::vector<SafetensorsEntry> readSafetensorsEntries(const std::string& path);

// Copies `tensors` into `target` (a model's state dict): every name must be present with the
// same shape, and no extra names. Throws ConfigError naming the first mismatch.
void loadIntoStateDict(const NamedTensors& target, const NamedTensors& tensors, const std::string& origin);
// "[2, 3]".
std::string shapeText(torch::IntArrayRef shape);
// Only the check: `shapes` (name -> shape, e.g. a file's header) has every name of `target` with
// its shape and no other. Throws ConfigError naming `origin` and the first mismatch.
void requireSameTensors(const NamedTensors& target, const std::map<std::string, std::vector<int64_t>>& shapes,
                        const std::string& origin);

}  // namespace trainbench
