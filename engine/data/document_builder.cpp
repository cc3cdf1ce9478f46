// DocumentBuilder: bytes appended document by document, with the counted marks of pairs.
#include "data/document_builder.h"

namespace trainbench {

RecordFields RecordFields::of(const DataConfig& data) {
    RecordFields f;
    if (readsPairs(data)) {
        f.prompt = data.prompt_field;
        f.completion = data.completion_field;
    } else {
        f.text = data.text_field;
    }
    return f;
}

void DocumentBuilder::append(std::string_view bytes, uint8_t counted) {
    for (char ch : bytes) docs_.ids.push_back(static_cast<uint8_t>(ch));
    if (any_pair_) docs_.counted.insert(docs_.counted.end(), bytes.size(), counted);
    bytes_ += static_cast<int64_t>(bytes.size());
}

void DocumentBuilder::close() {
    docs_.ids.push_back(end_byte_);
    if (any_pair_) docs_.counted.push_back(1);
    docs_.starts.push_back(static_cast<int64_t>(docs_.ids.size()));
}

void DocumentBuilder::addText(std::string_view text) {
    if (text.empty()) {
        ++dropped_empty_;
        return;
    }
    append(text, 1);
    close();
}

void DocumentBuilder::addPair(std::string_view prompt, std::string_view completion) {
    if (!any_pair_) {
        // Everything before the first pair counted: the marks start now, filled for it.
        any_pair_ = true;
        docs_.counted.assign(docs_.ids.size(), 1);
    }
    append(prompt, 0);
    append(completion, 1);
    close();
}

Documents DocumentBuilder::take() {
    Documents out = std::move(docs_);
    docs_ = Documents{};
    docs_.starts.push_back(0);
    any_pair_ = false;
    return out;
}

}  // namespace trainbench
