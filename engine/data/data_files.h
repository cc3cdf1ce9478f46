// The files a data path stands for: a file, or a folder's files in sorted path order.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace trainbench {

// A folder is walked recursively; hidden entries (.git, .DS_Store) are skipped. With `suffixes`
// a folder's files are those whose names end in one of them (a file named directly is taken
// whatever its name); `kind` names them in errors ("text files", "JSON Lines files"). Throws
// ConfigError naming `field`, the path and a fix when nothing is there.
std::vector<std::filesystem::path> listDataFiles(const std::string& path, const std::string& field,
                                                 const std::vector<std::string>& suffixes = {},
                                                 const std::string& kind = "text files");

}  // namespace trainbench
