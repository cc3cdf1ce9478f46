#include "offload/boundary_file.h"

#include <stdexcept>

namespace trainbench {

BoundaryFile::BoundaryFile(std::string path, int64_t slots, int64_t slot_bytes)
    : slots_(slots),
      slot_bytes_(alignedUp(std::max<int64_t>(1, slot_bytes))),
      file_(std::move(path), std::max<int64_t>(1, slots) * slot_bytes_),
      kept_(static_cast<size_t>(std::max<int64_t>(1, slots))),
      read_buffer_(slot_bytes_) {
    for (auto& w : writes_) w.buffer = std::make_unique<AlignedBuffer>(slot_bytes_);
}

void BoundaryFile::put(int64_t slot, const torch::Tensor& t) {
    const int64_t bytes = int64_t(t.nbytes());
    if (slot < 0 || slot >= slots_ || bytes > slot_bytes_)
        throw std::logic_error("BoundaryFile::put: slot " + std::to_string(slot) + " of " + std::to_string(slots_) +
                               ", " + std::to_string(bytes) + " bytes in a region of " + std::to_string(slot_bytes_));
    WriteBuffer& w = writes_[next_write_];
    next_write_ = 1 - next_write_;
    if (w.ticket) file_.wait(w.ticket);  // the buffer's last write has left it
    // Straight into the aligned buffer (from a GPU: one copy down).
    torch::from_blob(w.buffer->data(), t.sizes(), torch::TensorOptions().dtype(t.scalar_type())).copy_(t);
    w.ticket = file_.write(slot * slot_bytes_, w.buffer->data(), alignedUp(std::max<int64_t>(1, bytes)));
    Kept& k = kept_[size_t(slot)];
    k.sizes = t.sizes().vec();
    k.dtype = t.scalar_type();
    k.ticket = w.ticket;
}

torch::Tensor BoundaryFile::get(int64_t slot, const torch::Device& device) {
    if (slot < 0 || slot >= slots_ || kept_[size_t(slot)].sizes.empty())
        throw std::logic_error("BoundaryFile::get: slot " + std::to_string(slot) + " holds nothing");
    Kept& k = kept_[size_t(slot)];
    if (k.ticket) {
        file_.wait(k.ticket);  // read what was written, not what the region held before
        k.ticket = 0;
    }
    const torch::Tensor view = torch::from_blob(read_buffer_.data(), k.sizes, torch::TensorOptions().dtype(k.dtype));
    const int64_t bytes = int64_t(view.nbytes());
    file_.wait(file_.read(slot * slot_bytes_, read_buffer_.data(), alignedUp(std::max<int64_t>(1, bytes))));
    // The buffer is read into again at the next get: the caller's tensor is its own.
    return device.is_cpu() ? view.clone() : view.to(device);
}

}  // namespace trainbench
