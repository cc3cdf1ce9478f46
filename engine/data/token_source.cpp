// Opens the configured data source.
#include "data/token_source.h"

#include "data/markov_source.h"
#include "trainbench/config_io.h"

namespace trainbench {

std::unique_ptr<TokenSource> openTokenSource(const RunConfig& config) {
    const DataConfig& d = config.data;
    if (d.source == "markov") {
        int64_t vocab = d.vocab_size > 0 ? d.vocab_size : config.model.vocab_size;
        return std::make_unique<MarkovSource>(vocab, d.order, d.concentration, static_cast<uint64_t>(d.seed));
    }
    throw ConfigError("data.source", "data.source (\"" + d.source +
                                         "\"): this build reads only the markov source so far; use \"markov\"");
}

}  // namespace trainbench
