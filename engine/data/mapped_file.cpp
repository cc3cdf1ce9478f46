// MappedFile: open, fstat and mmap with errors that name the file and the config field.
#include "data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trainbench/config_io.h"

namespace trainbench {

MappedFile::MappedFile(const std::string& path, const std::string& field) : path_(path) {
    const std::string where = field + " (\"" + path + "\")";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int error = errno;
        throw ConfigError(field, where + ": cannot open: " + std::strerror(error) +
                                     (error == ENOENT ? "; check the path (relative paths start at the working directory)"
                                                      : "; check the file's permissions"));
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        throw ConfigError(field, where + ": not a regular file; point " + field + " at a token file");
    }
    size_ = static_cast<size_t>(info.st_size);
    if (size_ > 0) {
        void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapped == MAP_FAILED) {
            const int error = errno;
            ::close(fd);
            throw ConfigError(field, where + ": cannot memory-map: " + std::strerror(error));
        }
        data_ = static_cast<const uint8_t*>(mapped);
    }
    fd_ = fd;
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    ::close(fd_);
}

std::string MappedFile::changeSinceMapped(bool replaced_is_fine) const {
    struct stat info {};
    if (::fstat(fd_, &info) != 0) return path_ + " can no longer be read: " + std::strerror(errno);
    if (info.st_nlink == 0 && !replaced_is_fine) return path_ + " was removed (or replaced) during the run";
    if (static_cast<size_t>(info.st_size) != size_)
        return path_ + " changed size during the run, from " + std::to_string(size_) + " to " +
               std::to_string(info.st_size) + " bytes";
    return {};
}

}  // namespace trainbench
