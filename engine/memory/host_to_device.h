// Small host tensors made each step (token windows, expert offsets, index lists, balance loads)
// on their way to the rank's device.
#pragma once

#include <torch/torch.h>

namespace trainbench {

// `host` on `device`. To a GPU through page-locked memory with a non-blocking copy: a copy
// from pageable memory waits for the GPU to finish all it was given (the host stalls once per
// call and the stream runs dry). The staging buffer comes from c10's pinned-memory cache,
// which keeps it until the copy has run. On the CPU (or already there): `host` itself.
torch::Tensor copyToDevice(const torch::Tensor& host, const torch::Device& device);

// The same with a change of dtype, done on the host before the copy (fewer bytes when narrower).
torch::Tensor copyToDevice(const torch::Tensor& host, const torch::Device& device, torch::ScalarType dtype);

}  // namespace trainbench
