#include "offload/offload_dir.h"

#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>

#include "offload/direct_file.h"
#include "trainbench/config_io.h"

namespace trainbench {

std::string offloadFilePath(const std::string& dir, int rank, const std::string& part, const std::string& what) {
    return (std::filesystem::path(dir) / ("trainbench-" + std::to_string(::getpid()) + "-rank" + std::to_string(rank) +
                                          "-" + part + "." + what))
        .string();
}

int removeStaleOffloadFiles(const std::string& dir) {
    int removed = 0;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
        const std::string name = entry.path().filename().string();
        // trainbench-<pid>-rank<r>-<part>.moments (or .weights, .gradients)
        const auto extension = entry.path().extension();
        if (name.rfind("trainbench-", 0) != 0 || (extension != ".moments" && extension != ".weights" && extension != ".gradients")) continue;
        const size_t digits = name.find('-', 11);
        if (digits == std::string::npos) continue;
        const std::string pid_text = name.substr(11, digits - 11);
        if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
        const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
        if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
        if (std::filesystem::remove(entry.path(), error)) ++removed;
    }
    return removed;
}

void requireUsableOffloadDir(const std::string& dir, int64_t needed_bytes) {
    const std::string field = "runtime.offload_dir";
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error))
        throw ConfigError(field, field + " \"" + dir + "\" is not a directory; create it on a local disk (NVMe) or clear "
                                                     "runtime.offload_dir to keep the moments in host memory");
    // Space a killed run left behind is this run's to use.
    removeStaleOffloadFiles(dir);
    // A probe of what the run will do: create, reserve, write and read a block around the cache.
    const std::string probe = offloadFilePath(dir, -1, "probe");
    try {
        DirectFile file(probe, kDirectAlignment);
        AlignedBuffer block(kDirectAlignment);
        file.wait(file.write(0, block.data(), kDirectAlignment));
        file.wait(file.read(0, block.data(), kDirectAlignment));
    } catch (const std::exception& e) {
        throw ConfigError(field, field + " \"" + dir + "\" cannot hold the offloaded moments: " + e.what());
    }
    struct statvfs space {};
    if (::statvfs(dir.c_str(), &space) == 0) {
        const int64_t free_bytes = int64_t(space.f_bavail) * int64_t(space.f_frsize);
        if (free_bytes < needed_bytes)
            throw ConfigError(field, field + " \"" + dir + "\" has " + std::to_string(free_bytes >> 20) +
                                         " MiB free and the run puts " + std::to_string(needed_bytes >> 20) +
                                         " MiB of AdamW moments there; free space or use another disk");
    }
}

}  // namespace trainbench
