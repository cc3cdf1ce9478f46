// DocumentSource: the cached corpus split into training and validation, and the two layouts.
#include "data/document_source.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "data/holdout.h"
#include "files/sha256.h"
#include "trainbench/config_io.h"

namespace trainbench {

DocumentSource::DocumentSource(const DataConfig& data) : padded_(rowLayout(data) == RowLayout::Padded) {
    CorpusTokens tokens;
    tokens.end_token = static_cast<int32_t>(kEndOfDocument);
    if (!data.tokenizer.empty()) {
        tokenizer_ = openDataTokenizer(data.tokenizer);
        tokens.end_token = tokenizer_->endOfText();
        if (tokens.end_token < 0)
            throw ConfigError("data.tokenizer", "data.tokenizer (\"" + data.tokenizer +
                                                    "\"): the tokenizer has no end-of-text token to close documents "
                                                    "with (none of <|endoftext|>, <|end_of_text|>, </s>, <eos>, "
                                                    "<｜end▁of▁sentence｜> among its added tokens); add one");
        vocab_size_ = tokenizer_->vocabSize();
        tokens.tokenizer = tokenizer_.get();
        tokens.tokenizer_hash = sha256OfFile(data.tokenizer);
        paths_.push_back(data.tokenizer);
    }
    tokens.vocab_size = vocab_size_;
    paths_.push_back(data.path);
    corpus_ = cacheCorpus(data, data.path, "data.path", tokens);
    const TokenCache& all = *corpus_.cache;
    const int64_t docs = all.documents(), ids = all.ids();
    if (!data.val_path.empty()) {
        paths_.push_back(data.val_path);
        val_corpus_ = cacheCorpus(data, data.val_path, "data.val_path", tokens);
        const TokenCache& val = *val_corpus_.cache;
        train_ = {&all, 0, ids, 0, docs};
        val_ = {&val, 0, val.ids(), 0, val.documents()};
    } else if (padded_) {
        // Rows are documents, so whole documents are held out.
        const int64_t held = heldOutCount(docs, data.val_fraction);
        const int64_t cut = all.start(docs - held);
        train_ = {&all, 0, cut, 0, docs - held};
        val_ = {&all, cut, ids - cut, docs - held, held};
    } else {
        // A packed stream is held out by tokens: one long file still gets a validation part. A
        // document across the cut counts in both parts.
        const int64_t cut = ids - heldOutCount(ids, data.val_fraction);
        train_ = {&all, 0, cut, 0, all.documentsStartingBefore(cut)};
        val_ = {&all, cut, ids - cut, 0, all.documentsEndingAfter(cut)};
    }
}

int64_t DocumentSource::sampleCount(Split split, int64_t length) const {
    if (padded_) return documentCount(split);
    return length > 0 ? tokenCount(split) / length : 0;
}

DocumentSource::Span DocumentSource::span(const Part& p, int64_t index, int64_t length) const {
    if (!padded_) return {p.first_id + index * length, length};
    const int64_t first = p.cache->start(p.first_doc + index);
    return {first, std::min(length, p.cache->start(p.first_doc + index + 1) - first)};
}

void DocumentSource::readSample(Split split, int64_t index, int64_t length, int64_t* out) const {
    const Part& p = part(split);
    if (index < 0 || index >= sampleCount(split, length))
        throw std::out_of_range("DocumentSource: sample " + std::to_string(index) + " of " +
                                std::to_string(sampleCount(split, length)));
    const auto [first, available] = span(p, index, length);
    for (int64_t j = 0; j < available; ++j) out[j] = p.cache->id(first + j);
    std::fill(out + available, out + length, int64_t{-1});
}

bool DocumentSource::hasPromptTokens() const {
    return corpus_.cache->marked() || (val_corpus_.cache && val_corpus_.cache->marked());
}

void DocumentSource::readCounted(Split split, int64_t index, int64_t length, uint8_t* counted) const {
    const Part& p = part(split);
    const auto [first, available] = span(p, index, length);
    for (int64_t j = 0; j < available; ++j) counted[j] = p.cache->counts(first + j) ? 1 : 0;
    std::fill(counted + available, counted + length, uint8_t{0});
}

int64_t DocumentSource::countedTokens(Split split) const {
    const Part& p = part(split);
    return p.cache->countedIn(p.first_id, p.first_id + p.id_count);
}

int64_t DocumentSource::bytesRead() const {
    return corpus_.cache->header().bytes_read + (val_corpus_.cache ? val_corpus_.cache->header().bytes_read : 0);
}

std::vector<DocumentSource::CacheUse> DocumentSource::caches() const {
    std::vector<CacheUse> out;
    for (const CachedCorpus* c : {&corpus_, &val_corpus_})
        if (c->cache)
            out.push_back({c->cache->path(), c->cache->header().file_size, static_cast<int>(c->cache->header().width),
                           c->built});
    return out;
}

std::string DocumentSource::fileProblem() const {
    for (const std::string& path : paths_) {
        std::error_code error;
        if (!std::filesystem::exists(path, error)) return path + " was removed during the run";
    }
    for (const CachedCorpus* c : {&corpus_, &val_corpus_})
        if (c->cache)
            if (std::string change = c->cache->changeSinceOpened(); !change.empty()) return change;
    return {};
}

}  // namespace trainbench
