// JSON Lines: lines cut from the decompressed stream, each parsed on its own so an error names
// its line.
#include "data/jsonl_records.h"

#include <nlohmann/json.hpp>

#include <string_view>

#include "data/byte_stream.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace {

bool blank(std::string_view line) {
    return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

std::string fieldNames(const nlohmann::json& object) {
    std::string out;
    int listed = 0;
    for (auto it = object.begin(); it != object.end() && listed < 12; ++it, ++listed)
        out += (listed ? ", " : "") + ("\"" + it.key() + "\"");
    if (object.size() > 12) out += ", ...";
    return out.empty() ? "none" : out;
}

const char* typeName(const nlohmann::json& value) {
    return value.is_null() ? "null" : value.type_name();
}

class LineReader {
public:
    LineReader(const std::filesystem::path& file, const RecordFields& fields, DocumentBuilder& out,
               const std::string& path_field)
        : file_(file), fields_(fields), out_(out), path_field_(path_field) {}

    void line(std::string_view text, int64_t number) {
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        if (blank(text)) return;
        nlohmann::json record;
        try {
            record = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
            throw ConfigError(path_field_, where(number) + "is not JSON (" + shortened(e.what()) +
                                               "); each line must be one JSON object");
        } catch (const nlohmann::json::out_of_range&) {
            // (a number beyond a double, 1e999: valid JSON text that nlohmann cannot hold)
            throw ConfigError(path_field_, where(number) + "holds a number too large for a double; each line must be "
                                                           "one JSON object with numbers a double holds");
        }
        if (!record.is_object())
            throw ConfigError(path_field_, where(number) + "is a JSON " + typeName(record) +
                                               ", not an object; each line must be one JSON object such as {\"" +
                                               (fields_.pairs() ? fields_.prompt : fields_.text) + "\": \"...\"}");
        if (fields_.pairs()) {
            const std::string& prompt = text_of(record, fields_.prompt, "data.prompt_field", number);
            const std::string& completion = text_of(record, fields_.completion, "data.completion_field", number);
            out_.addPair(prompt, completion);
        } else {
            out_.addText(text_of(record, fields_.text, "data.text_field", number));
        }
    }

private:
    std::string where(int64_t number) const {
        return path_field_ + ": \"" + file_.string() + "\" line " + std::to_string(number) + ": ";
    }
    static std::string shortened(std::string message) {
        // nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, column 9: ".
        if (const size_t at = message.find("column "); at != std::string::npos) message = message.substr(at);
        return message;
    }
    const std::string& text_of(const nlohmann::json& record, const std::string& name, const std::string& setting,
                               int64_t number) const {
        const auto it = record.find(name);
        if (it == record.end())
            throw ConfigError(setting, where(number) + "has no field \"" + name + "\" (" + setting + "); its fields: " +
                                           fieldNames(record) + "; set " + setting + " to the field holding the text");
        if (!it->is_string())
            throw ConfigError(setting, where(number) + "field \"" + name + "\" (" + setting + ") is a " + typeName(*it) +
                                           ", not a string; every record's \"" + name + "\" must be text");
        return it->get_ref<const std::string&>();
    }

    const std::filesystem::path& file_;
    const RecordFields& fields_;
    DocumentBuilder& out_;
    const std::string& path_field_;
};

}  // namespace

const std::vector<std::string>& jsonLinesSuffixes() {
    static const std::vector<std::string> suffixes{".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson"};
    return suffixes;
}

void readJsonLinesRecords(const std::filesystem::path& file, const RecordFields& fields, DocumentBuilder& out,
                          const std::string& path_field) {
    LineReader reader(file, fields, out, path_field);
    int64_t number = 0;
    std::string pending;  // the start of a line the last chunk cut
    std::vector<char> chunk(1 << 20);
    try {
        std::unique_ptr<ByteStream> stream = openByteStream(file);
        while (const size_t got = stream->read(chunk.data(), chunk.size())) {
            std::string_view rest(chunk.data(), got);
            for (size_t end; (end = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(end + 1)) {
                if (pending.empty()) {
                    reader.line(rest.substr(0, end), ++number);
                } else {
                    pending.append(rest.substr(0, end));
                    reader.line(pending, ++number);
                    pending.clear();
                }
            }
            pending.append(rest);
        }
    } catch (const ByteStreamError& e) {
        throw ConfigError(path_field, path_field + ": \"" + file.string() + "\" after line " + std::to_string(number) +
                                          ": " + e.what() + "; fetch or decompress the file again");
    }
    if (!pending.empty()) reader.line(pending, ++number);  // the last line needs no newline
}

}  // namespace trainbench
