// runtime.offload_dir: the directory of the NVMe tier, its scratch files, and the check that it
// can take them before a run starts.
#pragma once

#include <cstdint>
#include <string>

namespace trainbench {

// The scratch file of one rank's part (`part`: "all", or under expert parallelism "dense" and
// "experts") in `dir`, of `what` ("moments", or "weights" under offload all); the process id
// keeps two runs sharing a directory apart.
std::string offloadFilePath(const std::string& dir, int rank, const std::string& part,
                            const std::string& what = "moments");

// Removes the scratch files a process that is gone left in `dir` (killed mid-run: its files are
// never a record; the checkpoints are). Returns how many. Files of live processes stay.
int removeStaleOffloadFiles(const std::string& dir);

// Throws ConfigError naming runtime.offload_dir when `dir` is missing, not a directory, not
// writable, refuses O_DIRECT (tmpfs), or has less free space than `needed_bytes`.
void requireUsableOffloadDir(const std::string& dir, int64_t needed_bytes);

}  // namespace trainbench
