// BoundaryFile: the unit order's boundaries in runtime.offload_dir's scratch file
// (Placement::boundaries File), for a window whose K x (L + 1) block inputs and K gradients
// handed between units fit neither the device nor host memory (docs/design/offload.md, "The
// window as the schedule", Memory).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "offload/direct_file.h"

namespace trainbench {

// A file of `slots` equal regions, each whole 4 KiB blocks of `slot_bytes`. A tensor put in a
// slot is copied into one of two aligned buffers and written while the caller computes (the
// third put waits for the first's write); get() reads it back, the same bits.
class BoundaryFile {
public:
    BoundaryFile(std::string path, int64_t slots, int64_t slot_bytes);
    BoundaryFile(const BoundaryFile&) = delete;
    BoundaryFile& operator=(const BoundaryFile&) = delete;

    // Whether the file was made for at least `slots` slots of `slot_bytes` (a window asks again
    // when its K or its micro-batches' shapes change).
    bool holds(int64_t slots, int64_t slot_bytes) const { return slots <= slots_ && slot_bytes <= slot_bytes_; }
    // Writes `t` (any device, any dtype, at most slot_bytes) to `slot`.
    void put(int64_t slot, const torch::Tensor& t);
    // The tensor last put in `slot`, read back, on `device`.
    torch::Tensor get(int64_t slot, const torch::Device& device);
private:
    struct Kept {
        std::vector<int64_t> sizes;
        torch::ScalarType dtype = torch::kFloat32;
        int64_t ticket = 0;  // its write's, 0 once known complete
    };
    struct WriteBuffer {
        std::unique_ptr<AlignedBuffer> buffer;
        int64_t ticket = 0;
    };
    int64_t slots_ = 0, slot_bytes_ = 0;
    DirectFile file_;
    std::vector<Kept> kept_;
    WriteBuffer writes_[2];
    int next_write_ = 0;
    AlignedBuffer read_buffer_;
};

}  // namespace trainbench
