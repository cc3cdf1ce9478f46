// Listing a data path's files in a stable order, so every rank and every resume reads the same.
#include "data/data_files.h"

#include <algorithm>
#include <system_error>

#include "trainbench/config_io.h"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

bool isHidden(const fs::path& path) { return path.filename().string().rfind('.', 0) == 0; }

bool endsWithOneOf(const std::string& name, const std::vector<std::string>& suffixes) {
    if (suffixes.empty()) return true;
    return std::any_of(suffixes.begin(), suffixes.end(), [&](const std::string& suffix) {
        return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
}

std::string joined(const std::vector<std::string>& suffixes) {
    std::string out;
    for (size_t i = 0; i < suffixes.size(); ++i) out += (i ? ", " : "") + suffixes[i];
    return out;
}

}  // namespace

std::vector<fs::path> listDataFiles(const std::string& path, const std::string& field,
                                    const std::vector<std::string>& suffixes, const std::string& kind) {
    const std::string where = field + " (\"" + path + "\")";
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status))
        throw ConfigError(field, where + ": no such file or folder; check the path (relative paths start at the "
                                         "working directory)");
    if (fs::is_regular_file(status)) return {fs::path(path)};
    if (!fs::is_directory(status))
        throw ConfigError(field, where + ": neither a regular file nor a folder; point " + field + " at " + kind);
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        if (isHidden(it->path())) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file(ec) && endsWithOneOf(it->path().filename().string(), suffixes))
            files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty())
        throw ConfigError(field, where + ": the folder holds no " +
                                     (suffixes.empty() ? std::string("regular files") : kind + " (" + joined(suffixes) + ")") +
                                     "; put " + kind + " in it or point " + field + " at a file");
    return files;
}

}  // namespace trainbench
