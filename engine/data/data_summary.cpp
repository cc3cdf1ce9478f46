// DataSummary: opens the configured source and reads off its sizes at the configured window.
#include "trainbench/data_summary.h"

#include <nlohmann/json.hpp>

#include "data/document_source.h"
#include "data/mixture_source.h"
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
    std::vector<const DocumentSource*> documents;
    if (const auto* text = dynamic_cast<const DocumentSource*>(source.get())) documents.push_back(text);
    if (const auto* mixture = dynamic_cast<const MixtureSource*>(source.get())) {
        for (const MixtureSource::Part& part : mixture->parts()) {
            const DocumentSource& d = *part.source;
            s.mixture.push_back({part.name, "", part.weight, double(part.share) / double(mixture->cycle()),
                                 d.tokenCount(Split::Train), d.tokenCount(Split::Validation),
                                 d.documentCount(Split::Train), d.documentCount(Split::Validation),
                                 d.sampleCount(Split::Train, window)});
            documents.push_back(&d);
        }
        for (size_t i = 0; i < s.mixture.size(); ++i)
            s.mixture[i].source = config.data.sources[i].source.empty() ? config.data.source : config.data.sources[i].source;
    }
    if (!documents.empty()) {
        s.train_documents = s.val_documents = s.train_counted = s.val_counted = 0;
        int64_t bytes = 0;
        for (const DocumentSource* d : documents) {
            *s.train_documents += d->documentCount(Split::Train);
            *s.val_documents += d->documentCount(Split::Validation);
            *s.train_counted += d->countedTokens(Split::Train);
            *s.val_counted += d->countedTokens(Split::Validation);
            bytes += d->bytesRead();
            for (const auto& cache : d->caches())
                s.token_caches.push_back({cache.path, cache.bytes, cache.id_bytes, cache.built});
        }
        s.tokenizer = config.data.tokenizer.empty() ? "bytes" : documents[0]->tokenizerKind() + " (" + config.data.tokenizer + ")";
        if (bytes > 0)
            s.tokens_per_byte = double(source->tokenCount(Split::Train) + source->tokenCount(Split::Validation)) / double(bytes);
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
    out["mixture"] = nlohmann::json::array();
    for (const auto& part : s.mixture)
        out["mixture"].push_back({{"name", part.name},
                                  {"source", part.source},
                                  {"weight", part.weight},
                                  {"share", part.share},
                                  {"train_tokens", part.train_tokens},
                                  {"val_tokens", part.val_tokens},
                                  {"train_documents", part.train_documents},
                                  {"val_documents", part.val_documents},
                                  {"train_windows", part.train_windows}});
    for (const auto& cache : s.token_caches)
        out["token_caches"].push_back(
            {{"path", cache.path}, {"bytes", cache.bytes}, {"id_bytes", cache.id_bytes}, {"built", cache.built}});
    return out.dump();
}

}  // namespace trainbench
