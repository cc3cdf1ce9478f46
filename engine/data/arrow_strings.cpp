// Arrow string columns: the text types, messages on one line, and rows across chunks.
#include "data/arrow_strings.h"

namespace trainbench {
namespace {

// `values` is a string array of one of the three layouts holdsStrings accepts.
std::string_view stringAt(const arrow::Array& values, int64_t i) {
    switch (values.type_id()) {
        case arrow::Type::STRING:
            return static_cast<const arrow::StringArray&>(values).GetView(i);
        case arrow::Type::LARGE_STRING:
            return static_cast<const arrow::LargeStringArray&>(values).GetView(i);
        default:
            return static_cast<const arrow::StringViewArray&>(values).GetView(i);
    }
}

}  // namespace

bool holdsStrings(const arrow::DataType& type) {
    switch (type.id()) {
        case arrow::Type::STRING:
        case arrow::Type::LARGE_STRING:
        case arrow::Type::STRING_VIEW:
            return true;
        case arrow::Type::DICTIONARY:  // repeated texts stored once (pandas categoricals, Spark)
            return holdsStrings(*static_cast<const arrow::DictionaryType&>(type).value_type());
        default:
            return false;
    }
}

std::string oneLine(const std::string& message) {
    std::string out;
    for (char ch : message) {
        const bool space = ch == '\n' || ch == '\r' || ch == '\t' || ch == ' ';
        if (!space) out.push_back(ch);
        else if (!out.empty() && out.back() != ' ') out.push_back(' ');
    }
    while (!out.empty() && (out.back() == ' ' || out.back() == '.')) out.pop_back();
    return out;
}

std::optional<std::string_view> StringColumn::next() {
    while (chunk_ == nullptr || row_ >= chunk_->length()) {
        chunk_ = data_->chunk(next_chunk_++).get();
        row_ = 0;
        dictionary_ = chunk_->type_id() == arrow::Type::DICTIONARY
                          ? static_cast<const arrow::DictionaryArray*>(chunk_)
                          : nullptr;
        values_ = dictionary_ ? dictionary_->dictionary().get() : chunk_;
    }
    const int64_t i = row_++;
    if (chunk_->IsNull(i)) return std::nullopt;
    if (!dictionary_) return stringAt(*values_, i);
    const int64_t entry = dictionary_->GetValueIndex(i);
    if (values_->IsNull(entry)) return std::nullopt;
    return stringAt(*values_, entry);
}

}  // namespace trainbench
