#include "offload/direct_file.h"

#include <fcntl.h>
#include <libaio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

namespace trainbench {
namespace {

constexpr int64_t kChunkBytes = 1 << 20;
constexpr long kQueueDepth = 8;

std::string reason(int error) { return std::strerror(error); }

}  // namespace

AlignedBuffer::AlignedBuffer(int64_t bytes) : bytes_(alignedUp(std::max<int64_t>(bytes, 1))) {
    void* p = nullptr;
    if (posix_memalign(&p, size_t(kDirectAlignment), size_t(bytes_)) != 0) throw std::bad_alloc();
    std::memset(p, 0, size_t(bytes_));
    data_.reset(p);
}

struct DirectFile::Chunk {
    iocb control;
    int64_t ticket;
    bool write;
    int64_t bytes;
};

DirectFile::DirectFile(std::string path, int64_t bytes) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
    if (fd_ < 0) {
        const int error = errno;
        throw std::runtime_error(path_ + ": cannot be opened for direct I/O (" + reason(error) + ")" +
                                 (error == EINVAL ? "; the file system refuses O_DIRECT (tmpfs does): use a directory on a disk"
                                                  : ""));
    }
    // Reserve the blocks now, so a full disk fails here and not mid-run.
    const int reserved = ::posix_fallocate(fd_, 0, off_t(alignedUp(bytes)));
    io_context_t context = nullptr;
    const int setup = reserved == 0 ? io_setup(int(kQueueDepth), &context) : 0;
    if (reserved != 0 || setup != 0) {
        ::close(fd_);
        ::unlink(path_.c_str());
        throw std::runtime_error(path_ + ": " +
                                 (reserved != 0 ? "cannot reserve " + std::to_string(alignedUp(bytes)) + " bytes (" +
                                                      reason(reserved) + ")"
                                                : "asynchronous I/O unavailable (" + reason(-setup) + ")"));
    }
    context_ = context;
}

DirectFile::~DirectFile() {
    try {
        waitAll();
    } catch (...) {
        // Nothing waits on it any more: the file goes either way.
    }
    io_destroy(static_cast<io_context_t>(context_));
    ::close(fd_);
    ::unlink(path_.c_str());
}

int64_t DirectFile::read(int64_t offset, void* buffer, int64_t bytes) { return submit(false, offset, buffer, bytes); }

int64_t DirectFile::write(int64_t offset, const void* buffer, int64_t bytes) {
    return submit(true, offset, const_cast<void*>(buffer), bytes);
}

int64_t DirectFile::submit(bool write, int64_t offset, void* buffer, int64_t bytes) {
    if (offset % kDirectAlignment || bytes % kDirectAlignment || reinterpret_cast<uintptr_t>(buffer) % kDirectAlignment)
        throw std::logic_error("DirectFile: an unaligned transfer");
    const int64_t ticket = next_ticket_++;
    int64_t chunks = 0;
    for (int64_t done = 0; done < bytes; done += kChunkBytes, ++chunks) {
        auto chunk = std::make_unique<Chunk>();
        const int64_t n = std::min(kChunkBytes, bytes - done);
        char* at = static_cast<char*>(buffer) + done;
        if (write) io_prep_pwrite(&chunk->control, fd_, at, size_t(n), offset + done);
        else io_prep_pread(&chunk->control, fd_, at, size_t(n), offset + done);
        chunk->ticket = ticket;
        chunk->write = write;
        chunk->bytes = n;
        waiting_.push_back(std::move(chunk));
    }
    outstanding_[ticket] = chunks;
    reap(0);  // submits what the queue has room for
    return ticket;
}

void DirectFile::reap(long least) {
    auto* context = static_cast<io_context_t>(context_);
    for (;;) {
        // Fill the queue.
        while (!waiting_.empty() && long(in_flight_.size()) < kQueueDepth) {
            iocb* control = &waiting_.front()->control;
            const int submitted = io_submit(context, 1, &control);
            if (submitted != 1) throw std::runtime_error(path_ + ": cannot submit I/O (" + reason(-submitted) + ")");
            in_flight_.emplace(control, std::move(waiting_.front()));
            waiting_.pop_front();
        }
        if (least <= 0 || in_flight_.empty()) return;
        io_event events[kQueueDepth];
        const int got = io_getevents(context, 1, kQueueDepth, events, nullptr);
        if (got < 0) {
            if (got == -EINTR) continue;
            throw std::runtime_error(path_ + ": waiting for I/O failed (" + reason(-got) + ")");
        }
        for (int i = 0; i < got; ++i) {
            auto found = in_flight_.find(events[i].obj);
            if (found == in_flight_.end()) continue;
            const Chunk& chunk = *found->second;
            const long result = long(events[i].res);
            if (result != chunk.bytes && error_.empty())
                error_ = path_ + ": a " + (chunk.write ? "write" : "read") + " of " + std::to_string(chunk.bytes) +
                         " bytes " + (result < 0 ? "failed (" + reason(int(-result)) + ")" : "was short");
            (chunk.write ? bytes_written_ : bytes_read_) += chunk.bytes;
            --outstanding_[chunk.ticket];
            in_flight_.erase(found);
        }
        least -= got;
    }
}

void DirectFile::wait(int64_t ticket) {
    auto found = outstanding_.find(ticket);
    while (found != outstanding_.end() && found->second > 0) reap(1);
    if (found != outstanding_.end()) outstanding_.erase(found);
    if (!error_.empty()) throw std::runtime_error(error_);
}

void DirectFile::waitAll() {
    while (!in_flight_.empty() || !waiting_.empty()) reap(1);
    outstanding_.clear();
    if (!error_.empty()) throw std::runtime_error(error_);
}

}  // namespace trainbench
