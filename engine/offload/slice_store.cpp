#include "offload/slice_store.h"

#include <array>
#include <optional>
#include <stdexcept>

#include "offload/direct_file.h"
#include "offload/pinned_slabs.h"

namespace trainbench {
namespace {

class ResidentSliceStore : public SliceStore {
public:
    ResidentSliceStore(const std::vector<int64_t>& numels, const std::vector<SliceParts>& parts,
                       const torch::TensorOptions& options) {
        for (size_t b = 0; b < numels.size(); ++b) {
            slices_.emplace_back();
            for (torch::ScalarType dtype : parts[b]) slices_.back().push_back(torch::zeros({numels[b]}, options.dtype(dtype)));
        }
    }
    // Views of `slabs`, which the store keeps.
    ResidentSliceStore(const std::vector<int64_t>& numels, const std::vector<SliceParts>& parts,
                       std::unique_ptr<PinnedSlabs> slabs)
        : slabs_(std::move(slabs)) {
        for (size_t b = 0; b < numels.size(); ++b) {
            slices_.emplace_back();
            for (torch::ScalarType dtype : parts[b]) slices_.back().push_back(slabs_->take(numels[b], dtype).zero_());
        }
    }
    std::vector<torch::Tensor> acquire(size_t b) override { return slices_.at(b); }
    void release(size_t, bool) override {}

private:
    std::unique_ptr<PinnedSlabs> slabs_;  // what the slices view (empty: tensors of their own)
    std::vector<std::vector<torch::Tensor>> slices_;
};

// Bucket b's region of the file: its parts one after another, each padded to whole blocks (each
// part's bytes those of its own dtype).
// Bucket b is used in staging slot b % 2 while bucket b + 1 (or b - 1: the backward walks the
// units the other way) is read into the other; a slot is read into again only once its last
// write is complete.
class FileSliceStore : public SliceStore {
public:
    FileSliceStore(const std::string& path, const std::vector<int64_t>& numels, const std::vector<SliceParts>& parts)
        : numels_(numels), parts_(parts) {
        int64_t offset = 0, widest = 0;
        for (size_t b = 0; b < numels_.size(); ++b) {
            const int64_t n = numels_[b];
            offsets_.push_back(offset);
            int64_t region = 0;
            std::vector<int64_t> starts;
            for (torch::ScalarType dtype : parts_[b]) {
                starts.push_back(region);
                region += alignedUp(n * int64_t(torch::elementSize(dtype)));
            }
            part_starts_.push_back(std::move(starts));
            region_bytes_.push_back(region);
            offset += region;
            widest = std::max(widest, region);
        }
        file_ = std::make_unique<DirectFile>(path, std::max<int64_t>(offset, kDirectAlignment));
        for (auto& slot : slots_) slot.buffer = std::make_unique<AlignedBuffer>(widest);
    }

    void prefetch(size_t b) override {
        if (b >= numels_.size()) return;
        Slot& slot = slots_[b % 2];
        if (slot.bucket == int64_t(b)) return;  // already there (or on its way)
        if (slot.write) file_->wait(slot.write), slot.write = 0;
        if (slot.read) file_->wait(slot.read), slot.read = 0;
        slot.bucket = int64_t(b);
        slot.read = file_->read(offsets_[b], slot.buffer->data(), region_bytes_[b]);
    }

    std::vector<torch::Tensor> acquire(size_t b) override {
        prefetch(b);
        return slotViews(b);
    }

    std::vector<torch::Tensor> acquireToOverwrite(size_t b) override {
        Slot& slot = slots_[b % 2];
        slot.bucket = int64_t(b);
        return slotViews(b);
    }

    void release(size_t b, bool modified) override {
        Slot& slot = slots_[b % 2];
        if (!modified) return;
        slot.write = file_->write(offsets_[b], slot.buffer->data(), region_bytes_[b]);
    }

    void flush() override {
        file_->waitAll();
        for (auto& slot : slots_) slot.read = slot.write = 0;
    }
    int64_t bytesRead() const override { return file_->bytesRead(); }
    int64_t bytesWritten() const override { return file_->bytesWritten(); }

private:
    // Bucket b's parts in its staging slot, once the slot's read (if any) has landed and its
    // last write has gone out (the buffer is not written over before).
    std::vector<torch::Tensor> slotViews(size_t b) {
        Slot& slot = slots_[b % 2];
        if (slot.read) file_->wait(slot.read), slot.read = 0;
        if (slot.write) file_->wait(slot.write), slot.write = 0;
        auto* base = static_cast<char*>(slot.buffer->data());
        std::vector<torch::Tensor> out;
        for (size_t part = 0; part < parts_[b].size(); ++part)
            out.push_back(torch::from_blob(base + part_starts_[b][part], {numels_[b]}, torch::TensorOptions().dtype(parts_[b][part])));
        return out;
    }

    struct Slot {
        std::unique_ptr<AlignedBuffer> buffer;
        int64_t bucket = -1;
        int64_t read = 0, write = 0;  // tickets in flight; 0: none
    };
    std::vector<int64_t> numels_;
    std::vector<SliceParts> parts_;  // per bucket
    std::vector<int64_t> offsets_, region_bytes_;     // per bucket: where its region starts, its bytes
    std::vector<std::vector<int64_t>> part_starts_;  // per bucket and part: the part's offset in the region
    std::unique_ptr<DirectFile> file_;
    std::array<Slot, 2> slots_;
};

}  // namespace

std::unique_ptr<SliceStore> makeSliceStore(const SliceHome& home, const std::vector<int64_t>& slice_numels,
                                           const std::vector<SliceParts>& parts, const torch::TensorOptions& like) {
    if (parts.size() != slice_numels.size()) throw std::logic_error("makeSliceStore: one list of parts per bucket");
    std::optional<ScopedMemoryAccount> counted;
    if (home.account) counted.emplace(home.account);
    if (!home.file.empty()) return std::make_unique<FileSliceStore>(home.file, slice_numels, parts);
    if (!home.host_slabs) return std::make_unique<ResidentSliceStore>(slice_numels, parts, like);
    std::vector<int64_t> requests;
    for (size_t b = 0; b < slice_numels.size(); ++b)
        for (torch::ScalarType dtype : parts[b]) requests.push_back(slice_numels[b] * int64_t(torch::elementSize(dtype)));
    PinnedSlabs::Options options;
    options.what = home.what;
    return std::make_unique<ResidentSliceStore>(slice_numels, parts, std::make_unique<PinnedSlabs>(requests, options));
}

std::unique_ptr<SliceStore> makeSliceStore(const SliceHome& home, const std::vector<int64_t>& slice_numels,
                                           const SliceParts& parts, const torch::TensorOptions& like) {
    return makeSliceStore(home, slice_numels, std::vector<SliceParts>(slice_numels.size(), parts), like);
}

std::unique_ptr<SliceStore> makeSliceStore(const SliceHome& home, const std::vector<int64_t>& slice_numels, int parts,
                                           const torch::TensorOptions& like) {
    return makeSliceStore(home, slice_numels, SliceParts(parts, like.dtype().toScalarType()), like);
}

std::unique_ptr<SliceStore> makeFileSliceStore(const std::string& path, const std::vector<int64_t>& slice_numels,
                                               const SliceParts& parts) {
    return std::make_unique<FileSliceStore>(path, slice_numels, std::vector<SliceParts>(slice_numels.size(), parts));
}

std::unique_ptr<SliceStore> makeFileSliceStore(const std::string& path, const std::vector<int64_t>& slice_numels,
                                               int parts, torch::ScalarType dtype) {
    return makeFileSliceStore(path, slice_numels, SliceParts(parts, dtype));
}

}  // namespace trainbench
