// EventFileWriter: Event messages (event_encoding.h) framed (tf_record.h) and appended.
#include "tensorboard/event_file_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tensorboard/event_encoding.h"
#include "tensorboard/tf_record.h"

namespace trainbench::tensorboard {
namespace {

std::string systemError(const std::string& path, const char* what) {
    return path + ": " + what + " (" + std::strerror(errno) + ")";
}

}  // namespace

std::string eventFileName(std::time_t unix_time) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
    return "events.out.tfevents." + std::to_string(static_cast<long long>(unix_time)) + "." + host + ".trainbench";
}

EventFileWriter::EventFileWriter(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) throw EventFileError(systemError(path, "cannot be created"));
    // A step's scalars are a few hundred bytes: one write to the OS per flush, not per record.
    std::setvbuf(file_, nullptr, _IOFBF, 1 << 16);
    append(fileVersionEvent(static_cast<double>(std::time(nullptr))));
}

EventFileWriter::~EventFileWriter() {
    if (file_) std::fclose(file_);
}

void EventFileWriter::addScalar(const std::string& tag, int64_t step, double wall_time, float value) {
    append(scalarEvent(tag, step, wall_time, value));
}

void EventFileWriter::addText(const std::string& tag, int64_t step, double wall_time, const std::string& text) {
    append(textEvent(tag, step, wall_time, text));
}

void EventFileWriter::addSessionStart(int64_t step, double wall_time) { append(sessionStartEvent(step, wall_time)); }

void EventFileWriter::append(const std::string& event_bytes) {
    if (!file_) throw EventFileError(path_ + ": written after it was closed");
    const std::string record = frameRecord(event_bytes);
    if (std::fwrite(record.data(), 1, record.size(), file_) != record.size())
        throw EventFileError(systemError(path_, "cannot be written"));
    bytes_ += static_cast<int64_t>(record.size());
}

void EventFileWriter::flush() {
    if (file_ && std::fflush(file_) != 0) throw EventFileError(systemError(path_, "cannot be written"));
}

void EventFileWriter::close() {
    if (!file_) return;
    std::FILE* file = file_;
    file_ = nullptr;
    if (std::fclose(file) != 0) throw EventFileError(systemError(path_, "cannot be written"));
}

}  // namespace trainbench::tensorboard
