// DocumentBuilder: bytes appended document by document, with the counted marks of pairs, in chunks.
#include "data/document_builder.h"

#include <algorithm>

namespace trainbench {
namespace {

// A chunk's bytes are reserved up front up to this (a test's or a caller's huge chunk size only
// grows as it fills).
constexpr int64_t kMaxReserve = int64_t{64} << 20;

}  // namespace

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
    // One allocation a chunk, not a doubling string that would hold up to twice the chunk.
    if (chunk_.bytes.empty())
        chunk_.bytes.reserve(static_cast<size_t>(std::min<int64_t>(chunk_bytes_, kMaxReserve)) + bytes.size() + 1);
    if (!marked_ && counted == 0) {
        // The chunk's first uncounted byte starts its marks: every byte before it counts.
        marked_ = true;
        chunk_.counted.assign(chunk_.bytes.size(), 1);
    }
    chunk_.bytes.append(bytes);
    if (marked_) chunk_.counted.insert(chunk_.counted.end(), bytes.size(), counted);
    bytes_ += static_cast<int64_t>(bytes.size());
    if (!bytes.empty()) open_ = true;
    if (split_ && static_cast<int64_t>(chunk_.bytes.size()) >= chunk_bytes_) flush(true);
}

void DocumentBuilder::close() {
    chunk_.bytes.push_back(end_byte_);
    if (marked_) chunk_.counted.push_back(1);
    chunk_.starts.push_back(static_cast<int64_t>(chunk_.bytes.size()));
    open_ = any_open_ = false;
    ++documents_;
    if (static_cast<int64_t>(chunk_.bytes.size()) >= chunk_bytes_) flush(false);
}

void DocumentBuilder::flush(bool open) {
    if (open) {
        chunk_.starts.push_back(static_cast<int64_t>(chunk_.bytes.size()));
        chunk_.last_open = true;
        any_open_ = true;
    }
    if (chunk_.bytes.empty()) {
        chunk_ = ByteChunk{};
        marked_ = false;
        return;
    }
    sink_(std::move(chunk_));
    chunk_ = ByteChunk{};
    marked_ = false;
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
    append(prompt, 0);
    append(completion, 1);
    close();
}

void DocumentBuilder::appendText(std::string_view piece) { append(piece, 1); }

void DocumentBuilder::endDocument() {
    if (open_ || any_open_) close();
    else ++dropped_empty_;
}

void DocumentBuilder::finish() {
    if (open_ || any_open_) close();
    flush(false);
}

}  // namespace trainbench
