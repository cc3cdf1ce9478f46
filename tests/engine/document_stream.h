// What the document-source suites read back: a source's whole training part as one window (ids
// and counted marks), and the ConfigError an action raises.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "data/document_source.h"
#include "trainbench/config_io.h"

namespace trainbench {

inline std::vector<int64_t> wholeStream(const DocumentSource& source) {
    const int64_t n = source.tokenCount(Split::Train);
    std::vector<int64_t> out(n);
    source.readSample(Split::Train, 0, n, out.data());
    return out;
}

inline std::vector<uint8_t> wholeCounted(const DocumentSource& source) {
    const int64_t n = source.tokenCount(Split::Train);
    std::vector<uint8_t> out(n);
    source.readCounted(Split::Train, 0, n, out.data());
    return out;
}

struct Refusal {
    std::string field, message;
};

// The field and message of the ConfigError `action` throws; "<none>" when it throws none.
inline Refusal refusalOf(const std::function<void()>& action) {
    try {
        action();
    } catch (const ConfigError& e) {
        return {e.path(), e.what()};
    }
    return {"<none>", "<no ConfigError>"};
}

}  // namespace trainbench
