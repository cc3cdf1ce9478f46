// MicroBatchReader: a rank's micro-batches read on threads of their own, one ahead of the
// compute, across window boundaries too, so the rank never waits on I/O (a source's reads are
// const and thread-safe). Each read charges its buffers to the rank's memory account.
#pragma once

#include <cstdint>
#include <future>

#include "data/batch_sampler.h"
#include "data/token_source.h"
#include "memory/memory_account.h"

namespace trainbench {

// Where a micro-batch lies: micro-batch k of the window that starts at global sample
// `first_sample` and has `window` micro-batches per rank of `micro_batch_size` sequences.
struct MicroBatchPlace {
    int64_t step = 0;
    int64_t first_sample = 0;
    int64_t k = 0;
    int64_t micro_batch_size = 1;
    int64_t window = 1;
    int64_t seq_len = 1;
    uint64_t seed = 0;
};

class MicroBatchReader {
public:
    // `source` must outlive the reader.
    MicroBatchReader(const TokenSource& source, int rank, MemoryAccount* memory)
        : source_(source), rank_(rank), memory_(memory) {}
    ~MicroBatchReader() { dropAhead(); }

    // Starts reading `place` now.
    std::future<MicroBatch> start(const MicroBatchPlace& place) const;
    // The first micro-batch of a window: the one read ahead for its step, or a read started now.
    std::future<MicroBatch> first(const MicroBatchPlace& place);
    // Starts reading the next window's first micro-batch while this window computes.
    void readAhead(const MicroBatchPlace& place);
    // The split changed (a back-off, an adaptive growth): what was read ahead is not the next one.
    void dropAhead();

private:
    const TokenSource& source_;
    int rank_;
    MemoryAccount* memory_;
    std::future<MicroBatch> ahead_;
    int64_t ahead_step_ = -1;
};

}  // namespace trainbench
