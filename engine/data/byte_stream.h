// ByteStream: a data file's bytes read front to back, decompressed on the way when the file
// is gzip or zstd (told by its first bytes, not its name).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace trainbench {

// A file that cannot be opened or read, or a compressed stream that is corrupt or ends before
// its end (a truncated download): what went wrong, without the file's name (the caller adds it).
class ByteStreamError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ByteStream {
public:
    virtual ~ByteStream() = default;
    // Up to `capacity` bytes into `out`; 0 at the end. Throws ByteStreamError.
    virtual size_t read(char* out, size_t capacity) = 0;
    // "plain" | "gzip" | "zstd"
    virtual const char* encoding() const = 0;
};

// Opens `file`; throws ByteStreamError when it cannot be opened.
std::unique_ptr<ByteStream> openByteStream(const std::filesystem::path& file);

}  // namespace trainbench
