// DocumentBuilder: the records of a dataset (a document's text, or a prompt/completion pair) as
// chunks of byte documents, handed on as they fill so a corpus is never whole in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trainbench/run_config.h"

namespace trainbench {

// Which fields of a record the run reads (data.text_field, or data.prompt_field and
// data.completion_field).
struct RecordFields {
    std::string text;
    std::string prompt;
    std::string completion;
    bool pairs() const { return !prompt.empty(); }
    static RecordFields of(const DataConfig& data);
};

// Byte documents back to back, each closed one followed by one end byte.
struct ByteChunk {
    std::string bytes;
    // Document i is bytes [starts[i], starts[i + 1]); starts[0] == 0, starts.back() == bytes.size().
    std::vector<int64_t> starts{0};
    // Per byte: 1 when it counts as a target, 0 for a prompt's; empty when the chunk holds no
    // pair (every byte counts), so plain text costs no marks.
    std::vector<uint8_t> counted;
    // The last document goes on in the next chunk (it has no end byte here). Only when the
    // builder may split documents (the byte form, where a document need not be whole to be read).
    bool last_open = false;

    int64_t documents() const { return static_cast<int64_t>(starts.size()) - 1; }
};

class DocumentBuilder {
public:
    using Sink = std::function<void(ByteChunk&&)>;
    // `end_byte` closes every document. A chunk is handed to `sink` when it holds about
    // `chunk_bytes` at the end of a document, or, with `split_documents`, anywhere.
    DocumentBuilder(int32_t end_byte, int64_t chunk_bytes, bool split_documents, Sink sink)
        : end_byte_(static_cast<char>(end_byte)), chunk_bytes_(chunk_bytes), split_(split_documents),
          sink_(std::move(sink)) {}

    // A document of text; an empty one is dropped (it would be an end token alone) and counted.
    void addText(std::string_view text);
    // A pair: the prompt's bytes are marked not counted, the completion's and the end byte are.
    // An empty completion keeps the pair (its end token is the one target); an empty prompt is
    // a plain document.
    void addPair(std::string_view prompt, std::string_view completion);
    // A document given in pieces (a text file streamed block by block): appendText, then
    // endDocument; a document with no bytes is dropped.
    void appendText(std::string_view piece);
    void endDocument();

    // Hands on what is left (a document still open is closed first).
    void finish();

    int64_t documents() const { return documents_; }
    int64_t droppedEmpty() const { return dropped_empty_; }
    // The text's bytes added (without the end bytes).
    int64_t bytes() const { return bytes_; }

private:
    void append(std::string_view bytes, uint8_t counted);
    void close();
    void flush(bool open);

    char end_byte_;
    int64_t chunk_bytes_;
    bool split_;
    Sink sink_;
    ByteChunk chunk_;
    bool marked_ = false;    // the chunk holds marks (a pair's prompt has been added to it)
    bool open_ = false;      // a document has bytes not yet closed
    bool any_open_ = false;  // the open document began in an earlier chunk
    int64_t documents_ = 0;
    int64_t dropped_empty_ = 0;
    int64_t bytes_ = 0;
};

}  // namespace trainbench
