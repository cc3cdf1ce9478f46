// removeTree: deletes a directory and everything under it.
#pragma once

#include <string>

namespace trainbench {

// Not std::filesystem::remove_all: libtorch.so exports its own copy of that function, which
// the dynamic linker may pick and which crashes on non-empty directories. Missing paths are
// no error; symbolic links are removed, never followed.
void removeTree(const std::string& path);

}  // namespace trainbench
