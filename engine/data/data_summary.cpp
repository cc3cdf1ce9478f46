// DataSummary: opens the configured source and reads off its sizes at the configured window.
#include "trainbench/data_summary.h"

#include <nlohmann/json.hpp>

#include "data/document_source.h"
#include "data/token_source.h"

namespace trainbench {
namespace {

std::optional<int64_t> bounded(int64_t value) { return value < 0 ? std::nullopt : std::optional<int64_t>(value); }

template <typename T>
nlohmann::json orNull(const std::optional<T>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

DataSummary describeData(const RunConfig& config) {
    auto source = openTokenSource(config);
    const int64_t window = config.train.seq_len + 1;
    DataSummary s;
    s.source = config.data.source;
    if (readsDocuments(config.data)) s.layout = config.data.layout;
    s.vocab_size = source->vocabSize();
    s.seq_len = config.train.seq_len;
    s.train_tokens = bounded(source->tokenCount(Split::Train));
    s.val_tokens = bounded(source->tokenCount(Split::Validation));
    s.train_windows = bounded(source->sampleCount(Split::Train, window));
    s.val_windows = bounded(source->sampleCount(Split::Validation, window));
    if (source->entropyFloor() >= 0) s.entropy_floor_nats = source->entropyFloor();
    if (const auto* text = dynamic_cast<const DocumentSource*>(source.get())) {
        s.train_documents = text->documentCount(Split::Train);
        s.val_documents = text->documentCount(Split::Validation);
        s.train_counted = text->countedTokens(Split::Train);
        s.val_counted = text->countedTokens(Split::Validation);
        s.tokenizer = config.data.tokenizer.empty() ? "bytes" : text->tokenizerKind() + " (" + config.data.tokenizer + ")";
        if (text->bytesRead() > 0)
            s.tokens_per_byte = double(text->tokenCount(Split::Train) + text->tokenCount(Split::Validation)) /
                                double(text->bytesRead());
        for (const auto& cache : text->caches())
            s.token_caches.push_back({cache.path, cache.bytes, cache.id_bytes, cache.built});
    }
    return s;
}

std::string dataSummaryToJson(const DataSummary& s) {
    nlohmann::json out{{"source", s.source},
                       {"layout", s.layout.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.layout)},
                       {"vocab_size", s.vocab_size},
                       {"seq_len", s.seq_len},
                       {"train_tokens", orNull(s.train_tokens)},
                       {"val_tokens", orNull(s.val_tokens)},
                       {"train_windows", orNull(s.train_windows)},
                       {"val_windows", orNull(s.val_windows)},
                       {"entropy_floor_nats", orNull(s.entropy_floor_nats)},
                       {"train_documents", orNull(s.train_documents)},
                       {"val_documents", orNull(s.val_documents)},
                       {"train_counted", orNull(s.train_counted)},
                       {"val_counted", orNull(s.val_counted)},
                       {"tokenizer", s.tokenizer.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.tokenizer)},
                       {"tokens_per_byte", orNull(s.tokens_per_byte)},
                       {"token_caches", nlohmann::json::array()}};
    for (const auto& cache : s.token_caches)
        out["token_caches"].push_back(
            {{"path", cache.path}, {"bytes", cache.bytes}, {"id_bytes", cache.id_bytes}, {"built", cache.built}});
    return out.dump();
}

}  // namespace trainbench
