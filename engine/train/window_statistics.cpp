// Named slots in the window's one reduction.
#include "train/window_statistics.h"

#include <stdexcept>

#include "memory/host_to_device.h"

namespace trainbench {

WindowStatistics::WindowStatistics(torch::Device device) : device_(device) {}

WindowStatistics::Slot WindowStatistics::add(const torch::Tensor& values) {
    device_parts_.push_back(values.reshape({-1}).to(device_, torch::kFloat64));
    entries_.push_back({device_parts_.back().numel(), static_cast<int64_t>(device_parts_.size()) - 1, 0, 0});
    return {static_cast<int64_t>(entries_.size()) - 1};
}

WindowStatistics::Slot WindowStatistics::add(double value) {
    entries_.push_back({1, -1, static_cast<int64_t>(host_values_.size()), 0});
    host_values_.push_back(value);
    return {static_cast<int64_t>(entries_.size()) - 1};
}

WindowStatistics::Slot WindowStatistics::perRank(int64_t ranks, int64_t rank, double value) {
    entries_.push_back({ranks, -1, static_cast<int64_t>(host_values_.size()), 0});
    host_values_.resize(host_values_.size() + static_cast<size_t>(ranks), 0.0);
    host_values_[static_cast<size_t>(entries_.back().host_begin + rank)] = value;
    return {static_cast<int64_t>(entries_.size()) - 1};
}

void WindowStatistics::reduce(Collectives& collectives) {
    // The device parts in the order added, then the host values as one block.
    std::vector<int64_t> part_offset(device_parts_.size(), 0);
    int64_t offset = 0;
    for (size_t p = 0; p < device_parts_.size(); ++p) {
        part_offset[p] = offset;
        offset += device_parts_[p].numel();
    }
    const int64_t host_block = offset;
    for (Entry& e : entries_) e.offset = e.part >= 0 ? part_offset[static_cast<size_t>(e.part)] : host_block + e.host_begin;
    std::vector<torch::Tensor> parts = device_parts_;
    if (!host_values_.empty())
        parts.push_back(copyToDevice(torch::tensor(host_values_, torch::kFloat64), device_));
    std::vector<torch::Tensor> packed{parts.empty() ? torch::zeros({0}, torch::TensorOptions(device_).dtype(torch::kFloat64))
                                                    : torch::cat(parts)};
    collectives.allReduce(packed, ReduceOp::Sum);
    sums_ = packed[0].cpu();
}

const WindowStatistics::Entry& WindowStatistics::reduced(Slot slot) const {
    if (!sums_.defined()) throw std::logic_error("WindowStatistics: a slot read before reduce()");
    return entries_.at(static_cast<size_t>(slot.index));
}

int64_t WindowStatistics::size(Slot slot) const { return entries_.at(static_cast<size_t>(slot.index)).size; }

double WindowStatistics::value(Slot slot, int64_t i) const {
    const Entry& e = reduced(slot);
    if (i < 0 || i >= e.size) throw std::out_of_range("WindowStatistics: value past its slot");
    return sums_.data_ptr<double>()[e.offset + i];
}

torch::Tensor WindowStatistics::tensor(Slot slot) const {
    const Entry& e = reduced(slot);
    return sums_.narrow(0, e.offset, e.size);
}

}  // namespace trainbench
