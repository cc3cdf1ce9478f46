#include "trainbench/data_folder.h"

#include <cstdlib>

namespace trainbench {

std::string dataFolder() {
    if (const char* explicit_folder = std::getenv("TRAINBENCH_STORE"); explicit_folder && *explicit_folder)
        return explicit_folder;
    if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data) return std::string(data) + "/trainbench";
    const char* home = std::getenv("HOME");
    return std::string(home ? home : ".") + "/.local/share/trainbench";
}

}  // namespace trainbench
