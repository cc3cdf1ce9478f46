// MappedFile: a read-only memory map of a whole file, unmapped when the object goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainbench {

class MappedFile {
public:
    // Maps `path` read-only. Throws ConfigError naming `field` and the path when the file is
    // missing, not a regular file or cannot be mapped. An empty file maps to size() == 0.
    MappedFile(const std::string& path, const std::string& field);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }
    // Why the file is no longer what was mapped, as a sentence naming it ("was removed",
    // "changed size from A to B bytes"); empty while it is unchanged. A file truncated under
    // its mapping would kill the process on the next read (SIGBUS), so readers ask first.
    // With `replaced_is_fine`, a file removed or replaced by another under its name is not a
    // change: the mapping keeps the old one whole (the token cache is replaced so).
    std::string changeSinceMapped(bool replaced_is_fine = false) const;

private:
    std::string path_;
    int fd_ = -1;  // kept open to ask the kernel about this very file, even after a rename
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace trainbench
