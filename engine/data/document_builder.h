// DocumentBuilder: the records of a dataset (a document's text, or a prompt/completion pair) as
// byte documents, the form the tokenizer cache and the layouts read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "data/tokenized_documents.h"
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

class DocumentBuilder {
public:
    // `end_byte` closes every document (the byte form's end-of-document id; the tokenizer
    // replaces it by its end-of-text token).
    explicit DocumentBuilder(int32_t end_byte) : end_byte_(end_byte) { docs_.starts.push_back(0); }

    // A document of text; an empty one is dropped (it would be an end token alone) and counted.
    void addText(std::string_view text);
    // A pair: the prompt's bytes are marked not counted, the completion's and the end byte are.
    // An empty completion keeps the pair (its end token is the one target); an empty prompt is
    // a plain document.
    void addPair(std::string_view prompt, std::string_view completion);

    int64_t documents() const { return static_cast<int64_t>(docs_.starts.size()) - 1; }
    int64_t droppedEmpty() const { return dropped_empty_; }
    // The text's bytes added (without the end bytes).
    int64_t bytes() const { return bytes_; }
    // The documents built; `counted` is empty when no pair was added.
    Documents take();

private:
    void append(std::string_view bytes, uint8_t counted);
    void close();

    int32_t end_byte_;
    Documents docs_;
    bool any_pair_ = false;
    int64_t dropped_empty_ = 0;
    int64_t bytes_ = 0;
};

}  // namespace trainbench
