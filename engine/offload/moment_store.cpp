#include "offload/moment_store.h"

#include <array>
#include <stdexcept>

#include "offload/direct_file.h"

namespace trainbench {
namespace {

class ResidentMomentStore : public MomentStore {
public:
    ResidentMomentStore(const std::vector<int64_t>& numels, const torch::TensorOptions& options) {
        for (int64_t n : numels) moments_.emplace_back(torch::zeros({n}, options), torch::zeros({n}, options));
    }
    std::pair<torch::Tensor, torch::Tensor> acquire(size_t b) override { return moments_.at(b); }
    void release(size_t, bool) override {}

private:
    std::vector<std::pair<torch::Tensor, torch::Tensor>> moments_;
};

// Bucket b's region of the file: its first moment, then its second, each padded to whole blocks.
// Bucket b steps in staging slot b % 2 while bucket b + 1 is read into the other; a slot is
// read into again only once its last write is complete.
class FileMomentStore : public MomentStore {
public:
    FileMomentStore(const std::string& path, const std::vector<int64_t>& numels, torch::ScalarType dtype)
        : numels_(numels), dtype_(dtype), element_(int64_t(torch::elementSize(dtype))) {
        int64_t offset = 0, widest = 0;
        for (int64_t n : numels_) {
            const int64_t moment = alignedUp(n * element_);
            offsets_.push_back(offset);
            moment_bytes_.push_back(moment);
            offset += 2 * moment;
            widest = std::max(widest, moment);
        }
        file_ = std::make_unique<DirectFile>(path, std::max<int64_t>(offset, kDirectAlignment));
        for (auto& slot : slots_) slot.buffer = std::make_unique<AlignedBuffer>(2 * widest);
    }

    void prefetch(size_t b) override {
        if (b >= numels_.size()) return;
        Slot& slot = slots_[b % 2];
        if (slot.bucket == int64_t(b)) return;  // already there (or on its way)
        if (slot.write) file_->wait(slot.write), slot.write = 0;
        if (slot.read) file_->wait(slot.read), slot.read = 0;
        slot.bucket = int64_t(b);
        slot.read = file_->read(offsets_[b], slot.buffer->data(), 2 * moment_bytes_[b]);
    }

    std::pair<torch::Tensor, torch::Tensor> acquire(size_t b) override {
        prefetch(b);
        Slot& slot = slots_[b % 2];
        if (slot.read) file_->wait(slot.read), slot.read = 0;
        // The buffer may still be going out to the file from the last step: not written over
        // until it has.
        if (slot.write) file_->wait(slot.write), slot.write = 0;
        auto* base = static_cast<char*>(slot.buffer->data());
        auto options = torch::TensorOptions().dtype(dtype_);
        return {torch::from_blob(base, {numels_[b]}, options),
                torch::from_blob(base + moment_bytes_[b], {numels_[b]}, options)};
    }

    void release(size_t b, bool modified) override {
        Slot& slot = slots_[b % 2];
        if (!modified) return;
        slot.write = file_->write(offsets_[b], slot.buffer->data(), 2 * moment_bytes_[b]);
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
    torch::ScalarType dtype_;
    int64_t element_;
    std::vector<int64_t> offsets_, moment_bytes_;
    std::unique_ptr<DirectFile> file_;
    std::array<Slot, 2> slots_;
};

}  // namespace

std::unique_ptr<MomentStore> makeResidentMomentStore(const std::vector<int64_t>& slice_numels,
                                                     const torch::TensorOptions& options) {
    return std::make_unique<ResidentMomentStore>(slice_numels, options);
}

std::unique_ptr<MomentStore> makeFileMomentStore(const std::string& path, const std::vector<int64_t>& slice_numels,
                                                 torch::ScalarType dtype) {
    return std::make_unique<FileMomentStore>(path, slice_numels, dtype);
}

}  // namespace trainbench
