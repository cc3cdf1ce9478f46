// DirectFile: a scratch file read and written around the page cache (O_DIRECT) with Linux
// native asynchronous I/O (libaio), for the NVMe tier of offload (runtime.offload_dir).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <string>

namespace trainbench {

// O_DIRECT moves whole logical blocks between the device and the buffer: offsets, lengths and
// buffer addresses are multiples of this.
constexpr int64_t kDirectAlignment = 4096;
inline int64_t alignedUp(int64_t bytes) { return (bytes + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment; }

// Host memory aligned for O_DIRECT.
class AlignedBuffer {
public:
    explicit AlignedBuffer(int64_t bytes);
    void* data() const { return data_.get(); }
    int64_t bytes() const { return bytes_; }

private:
    struct Free {
        void operator()(void* p) const { std::free(p); }
    };
    std::unique_ptr<void, Free> data_;
    int64_t bytes_ = 0;
};

class DirectFile {
public:
    // Creates `path` (replacing a file left there), `bytes` long and reading as zeros. Throws
    // std::runtime_error naming the path: not creatable, no O_DIRECT (tmpfs), no space.
    DirectFile(std::string path, int64_t bytes);
    // Waits for what is in flight, closes and removes the file: it is scratch, never a record.
    ~DirectFile();
    DirectFile(const DirectFile&) = delete;
    DirectFile& operator=(const DirectFile&) = delete;

    // Starts a transfer of `bytes` at `offset` from or to `buffer` (all aligned, see above);
    // returns its ticket. Requests go out in chunks of 1 MiB, at most 8 in flight.
    int64_t read(int64_t offset, void* buffer, int64_t bytes);
    int64_t write(int64_t offset, const void* buffer, int64_t bytes);
    // Returns once the ticket's transfer is complete; throws std::runtime_error on an I/O error.
    void wait(int64_t ticket);
    void waitAll();

    const std::string& path() const { return path_; }
    int64_t bytesRead() const { return bytes_read_; }
    int64_t bytesWritten() const { return bytes_written_; }

private:
    struct Chunk;
    int64_t submit(bool write, int64_t offset, void* buffer, int64_t bytes);
    // Reaps at least `least` completions.
    void reap(long least);

    std::string path_;
    int fd_ = -1;
    void* context_ = nullptr;  // io_context_t
    int64_t next_ticket_ = 1;
    std::map<int64_t, int64_t> outstanding_;  // ticket -> chunks not yet complete
    std::deque<std::unique_ptr<Chunk>> waiting_;  // chunks not yet submitted (queue full)
    std::map<const void*, std::unique_ptr<Chunk>> in_flight_;
    std::string error_;
    int64_t bytes_read_ = 0, bytes_written_ = 0;
};

}  // namespace trainbench
