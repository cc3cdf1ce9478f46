// Text documents: a block reader that finds separators across block boundaries.
#include "data/text_documents.h"

#include <fstream>
#include <string_view>
#include <vector>

namespace trainbench {

bool readTextDocuments(const std::filesystem::path& file, const std::string& separator, DocumentBuilder& out) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return false;
    std::vector<char> block(1 << 20);
    std::string pending;  // bytes read but not yet handed on: they may begin a separator
    while (true) {
        in.read(block.data(), static_cast<std::streamsize>(block.size()));
        const std::streamsize got = in.gcount();
        if (got == 0) break;
        pending.append(block.data(), static_cast<size_t>(got));
        if (separator.empty()) {
            out.appendText(pending);
            pending.clear();
            continue;
        }
        std::string_view rest(pending);
        for (size_t at; (at = rest.find(separator)) != std::string_view::npos; rest.remove_prefix(at + separator.size())) {
            out.appendText(rest.substr(0, at));
            out.endDocument();
        }
        // Everything but a separator's length less one is surely inside the current document.
        const size_t keep = std::min(rest.size(), separator.size() - 1);
        out.appendText(rest.substr(0, rest.size() - keep));
        pending = std::string(rest.substr(rest.size() - keep));
    }
    if (in.bad()) return false;
    out.appendText(pending);
    out.endDocument();
    return true;
}

}  // namespace trainbench
