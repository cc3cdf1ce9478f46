// EventFileWriter: one TensorBoard event file, appended record by record (scalars and text).
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string>

namespace trainbench::tensorboard {

// A file that cannot be created, written or closed; the message names the file and the reason.
class EventFileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// "events.out.tfevents.<unix time>.<host>.trainbench": TensorBoard reads only files whose name
// holds "tfevents", in the order of their names (the time first).
std::string eventFileName(std::time_t unix_time);

// Records go through the C library's buffer; flush() hands them to the OS, so a reader sees
// every record written before it whole (a reader stops at a partial record and retries).
// Not thread-safe: one owner thread. Every method throws EventFileError.
class EventFileWriter {
public:
    // Creates (truncates) `path` and writes the first record, the file version.
    explicit EventFileWriter(const std::string& path);
    ~EventFileWriter();  // closes without throwing; call close() to see a failure
    EventFileWriter(const EventFileWriter&) = delete;
    EventFileWriter& operator=(const EventFileWriter&) = delete;

    // `wall_time`: seconds since the Unix epoch. TensorBoard keeps a scalar as float32.
    void addScalar(const std::string& tag, int64_t step, double wall_time, float value);
    // A text summary (the text plugin renders it as Markdown): a scalar string tensor.
    void addText(const std::string& tag, int64_t step, double wall_time, const std::string& text);
    // A session begins at `step` (event_encoding.h: what a reader then forgets).
    void addSessionStart(int64_t step, double wall_time);
    void flush();
    void close();
    const std::string& path() const { return path_; }
    int64_t bytesWritten() const { return bytes_; }

private:
    void append(const std::string& event_bytes);
    std::string path_;
    std::FILE* file_ = nullptr;
    int64_t bytes_ = 0;
};

}  // namespace trainbench::tensorboard
