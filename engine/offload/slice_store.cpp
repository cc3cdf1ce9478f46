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
    ResidentSliceStore(const std::vector<int64_t>& numels, int parts, const torch::TensorOptions& options) {
        for (int64_t n : numels) {
            slices_.emplace_back();
            for (int part = 0; part < parts; ++part) slices_.back().push_back(torch::zeros({n}, options));
        }
    }
    // Views of `slabs`, which the store keeps.
    ResidentSliceStore(const std::vector<int64_t>& numels, int parts, torch::ScalarType dtype,
                       std::unique_ptr<PinnedSlabs> slabs)
        : slabs_(std::move(slabs)) {
        for (int64_t n : numels) {
            slices_.emplace_back();
            for (int part = 0; part < parts; ++part) slices_.back().push_back(slabs_->take(n, dtype).zero_());
        }
    }
    std::vector<torch::Tensor> acquire(size_t b) override { return slices_.at(b); }
    void release(size_t, bool) override {}

private:
    std::unique_ptr<PinnedSlabs> slabs_;  // what the slices view (empty: tensors of their own)
    std::vector<std::vector<torch::Tensor>> slices_;
};

// Bucket b's region of the file: its parts one after another, each padded to whole blocks.
// Bucket b is used in staging slot b % 2 while bucket b + 1 (or b - 1: the backward walks the
// units the other way) is read into the other; a slot is read into again only once its last
// write is complete.
class FileSliceStore : public SliceStore {
public:
    FileSliceStore(const std::string& path, const std::vector<int64_t>& numels, int parts, torch::ScalarType dtype)
        : numels_(numels), parts_(parts), dtype_(dtype), element_(int64_t(torch::elementSize(dtype))) {
        int64_t offset = 0, widest = 0;
        for (int64_t n : numels_) {
            const int64_t part = alignedUp(n * element_);
            offsets_.push_back(offset);
            part_bytes_.push_back(part);
            offset += parts_ * part;
            widest = std::max(widest, part);
        }
        file_ = std::make_unique<DirectFile>(path, std::max<int64_t>(offset, kDirectAlignment));
        for (auto& slot : slots_) slot.buffer = std::make_unique<AlignedBuffer>(parts_ * widest);
    }

    void prefetch(size_t b) override {
        if (b >= numels_.size()) return;
        Slot& slot = slots_[b % 2];
        if (slot.bucket == int64_t(b)) return;  // already there (or on its way)
        if (slot.write) file_->wait(slot.write), slot.write = 0;
        if (slot.read) file_->wait(slot.read), slot.read = 0;
        slot.bucket = int64_t(b);
        slot.read = file_->read(offsets_[b], slot.buffer->data(), parts_ * part_bytes_[b]);
    }

    std::vector<torch::Tensor> acquire(size_t b) override {
        prefetch(b);
        Slot& slot = slots_[b % 2];
        if (slot.read) file_->wait(slot.read), slot.read = 0;
        // The buffer may still be going out to the file from its last use: not written over
        // until it has.
        if (slot.write) file_->wait(slot.write), slot.write = 0;
        auto* base = static_cast<char*>(slot.buffer->data());
        auto options = torch::TensorOptions().dtype(dtype_);
        std::vector<torch::Tensor> out;
        for (int part = 0; part < parts_; ++part)
            out.push_back(torch::from_blob(base + part * part_bytes_[b], {numels_[b]}, options));
        return out;
    }

    void release(size_t b, bool modified) override {
        Slot& slot = slots_[b % 2];
        if (!modified) return;
        slot.write = file_->write(offsets_[b], slot.buffer->data(), parts_ * part_bytes_[b]);
    }

    void flush() override {
        file_->waitAll();
        for (auto& slot : slots_) slot.read = slot.write = 0;
    }
    int64_t bytesRead() const override { return file_->bytesRead(); }
    int64_t bytesWritten() const override { return file_->bytesWritten(); }

private:
    struct Slot {
        std::unique_ptr<AlignedBuffer> buffer;
        int64_t bucket = -1;
        int64_t read = 0, write = 0;  // tickets in flight; 0: none
    };
    std::vector<int64_t> numels_;
    int parts_;
    torch::ScalarType dtype_;
    int64_t element_;
    std::vector<int64_t> offsets_, part_bytes_;
    std::unique_ptr<DirectFile> file_;
    std::array<Slot, 2> slots_;
};

}  // namespace

std::unique_ptr<SliceStore> makeSliceStore(const SliceHome& home, const std::vector<int64_t>& slice_numels, int parts,
                                           const torch::TensorOptions& like) {
    std::optional<ScopedMemoryAccount> counted;
    if (home.account) counted.emplace(home.account);
    const torch::ScalarType dtype = like.dtype().toScalarType();
    if (!home.file.empty()) return makeFileSliceStore(home.file, slice_numels, parts, dtype);
    if (!home.host_slabs) return std::make_unique<ResidentSliceStore>(slice_numels, parts, like);
    std::vector<int64_t> requests;
    for (int64_t n : slice_numels)
        for (int part = 0; part < parts; ++part) requests.push_back(n * int64_t(torch::elementSize(dtype)));
    PinnedSlabs::Options options;
    options.what = home.what;
    return std::make_unique<ResidentSliceStore>(slice_numels, parts, dtype,
                                                std::make_unique<PinnedSlabs>(requests, options));
}

std::unique_ptr<SliceStore> makeFileSliceStore(const std::string& path, const std::vector<int64_t>& slice_numels,
                                               int parts, torch::ScalarType dtype) {
    return std::make_unique<FileSliceStore>(path, slice_numels, parts, dtype);
}

}  // namespace trainbench
