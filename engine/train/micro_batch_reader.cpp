#include "train/micro_batch_reader.h"

namespace trainbench {

std::future<MicroBatch> MicroBatchReader::start(const MicroBatchPlace& p) const {
    return std::async(std::launch::async, [this, p] {
        ScopedMemoryAccount account(memory_);
        auto indices = sourceSampleIndices(sampleIndicesFrom(p.first_sample, rank_, p.k, p.micro_batch_size, p.window),
                                           source_.sampleCount(Split::Train, p.seq_len + 1), p.seed);
        return readMicroBatch(source_, Split::Train, indices, p.seq_len);
    });
}

std::future<MicroBatch> MicroBatchReader::first(const MicroBatchPlace& place) {
    const bool ready = ahead_step_ == place.step && ahead_.valid();
    ahead_step_ = -1;
    return ready ? std::move(ahead_) : start(place);
}

void MicroBatchReader::readAhead(const MicroBatchPlace& place) {
    ahead_ = start(place);
    ahead_step_ = place.step;
}

void MicroBatchReader::dropAhead() {
    if (ahead_.valid()) ahead_.wait();
    ahead_ = {};
    ahead_step_ = -1;
}

}  // namespace trainbench
