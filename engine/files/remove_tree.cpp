// removeTree on nftw, deepest entries first.
#include "files/remove_tree.h"

#include <ftw.h>

#include <cstdio>

namespace trainbench {

void removeTree(const std::string& path) {
    auto remove_entry = [](const char* entry, const struct stat*, int, struct FTW*) { return std::remove(entry); };
    ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace trainbench
