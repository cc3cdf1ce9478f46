// Opens the configured data source and checks that its parts hold whole windows.
#include "data/token_source.h"

#include <sstream>

#include "data/markov_source.h"
#include "data/mixture_source.h"
#include "data/document_source.h"
#include "data/token_file_source.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace {

std::unique_ptr<TokenSource> construct(const RunConfig& config) {
    const DataConfig& d = config.data;
    if (dataSource(d) == DataSource::Markov) {
        int64_t vocab = d.vocab_size > 0 ? d.vocab_size : config.model.vocab_size;
        return std::make_unique<MarkovSource>(vocab, d.order, d.concentration, static_cast<uint64_t>(d.seed));
    }
    if (!d.sources.empty()) {
        auto mixture = std::make_unique<MixtureSource>(d, static_cast<uint64_t>(config.train.seed));
        if (mixture->vocabSize() > config.model.vocab_size)
            throw ConfigError("model.vocab_size", "model.vocab_size (" + std::to_string(config.model.vocab_size) +
                                                      ") is smaller than the mixture's vocabulary (" +
                                                      std::to_string(mixture->vocabSize()) + " ids); set model.vocab_size to " +
                                                      std::to_string(mixture->vocabSize()) + " or more");
        // Every source must hold a training window (it is drawn from), and a validation one when
        // evaluation runs and the others have none.
        const int64_t window = config.train.seq_len + 1;
        for (size_t i = 0; i < mixture->parts().size(); ++i) {
            const DocumentSource& part = *mixture->parts()[i].source;
            if (part.sampleCount(Split::Train, window) == 0)
                throw ConfigError("train.seq_len", "train.seq_len (" + std::to_string(config.train.seq_len) +
                                                       "): the training part of data.sources[" + std::to_string(i) +
                                                       "] (\"" + d.sources[i].path + "\") has " +
                                                       std::to_string(part.tokenCount(Split::Train)) +
                                                       " tokens, fewer than one window of train.seq_len + 1 = " +
                                                       std::to_string(window) + "; lower train.seq_len, or give that "
                                                       "source more data");
        }
        return mixture;
    }
    if (d.path.empty())
        throw ConfigError("data.path", "data.path (\"\"): is required for data.source \"" + d.source +
                                           "\"; set data.path to a " + (readsDocuments(d) ? "file or folder" : "token file"));
    if (readsDocuments(d)) {
        if (d.tokenizer.empty() && config.model.vocab_size < 256)
            throw ConfigError("model.vocab_size", "model.vocab_size (" + std::to_string(config.model.vocab_size) +
                                                      "): must be >= 256 to read data.path (\"" + d.path +
                                                      "\") as bytes; set model.vocab_size to 256 or more");
        auto text = std::make_unique<DocumentSource>(d);
        if (text->vocabSize() > config.model.vocab_size)
            throw ConfigError("model.vocab_size", "model.vocab_size (" + std::to_string(config.model.vocab_size) +
                                                      ") is smaller than the vocabulary of data.tokenizer (\"" +
                                                      d.tokenizer + "\": " + std::to_string(text->vocabSize()) +
                                                      " ids); set model.vocab_size to " +
                                                      std::to_string(text->vocabSize()) + " or more");
        return text;
    }
    if (dataSource(d) == DataSource::Tokens) return std::make_unique<TokenFileSource>(d, config.model.vocab_size);
    throw ConfigError("data.source", "data.source (\"" + d.source + "\"): unknown source; use markov, text or tokens");
}

}  // namespace

std::unique_ptr<TokenSource> openTokenSource(const RunConfig& config) {
    auto source = construct(config);
    // Training needs one window; evaluation, when it will run, one validation window.
    const int64_t window = config.train.seq_len + 1;
    const DataConfig& d = config.data;
    auto tooShort = [&](Split split, const std::string& file, const std::string& fix) {
        const char* name = split == Split::Train ? "training" : "validation";
        return ConfigError("train.seq_len", "train.seq_len (" + std::to_string(config.train.seq_len) + "): the " + name +
                                                " part of \"" + file + "\" has " + std::to_string(source->tokenCount(split)) +
                                                " tokens, fewer than one window of train.seq_len + 1 = " +
                                                std::to_string(window) + " tokens; lower train.seq_len or " + fix);
    };
    if (source->sampleCount(Split::Train, window) == 0) throw tooShort(Split::Train, d.path, "use more data");
    const std::string val_file = d.sources.empty() ? d.path : "the mixture's sources";
    if (config.train.eval_every > 0 && source->sampleCount(Split::Validation, window) == 0) {
        if (!d.val_path.empty()) throw tooShort(Split::Validation, d.val_path, "use a longer data.val_path");
        std::ostringstream fraction;
        fraction << d.val_fraction;
        throw tooShort(Split::Validation, val_file, "raise data.val_fraction (" + fraction.str() + ")");
    }
    return source;
}

}  // namespace trainbench
