// Tokenising documents: contiguous runs of a chunk's documents per thread, joined in order.
#include "data/tokenized_documents.h"

#include <algorithm>
#include <stdexcept>
#include <thread>
#include <tuple>


namespace trainbench {

TokenizedChunk tokenizeChunk(const ByteChunk& chunk, const Tokenizer& tokenizer, int32_t end_token) {
    const int64_t docs = chunk.documents();
    const int64_t total = static_cast<int64_t>(chunk.bytes.size());
    const int64_t threads =
        std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), docs));
    // Contiguous runs of about equal bytes, so the ids come back in order by concatenation.
    std::vector<int64_t> first_doc{0};
    for (int64_t t = 1; t < threads; ++t) {
        const int64_t target = total * t / threads;
        int64_t d = first_doc.back();
        while (d < docs && chunk.starts[d] < target) ++d;
        first_doc.push_back(d);
    }
    first_doc.push_back(docs);
    std::vector<TokenizedChunk> parts(threads);
    std::vector<std::string> errors(threads);
    auto run = [&](int64_t t) {
        try {
            TokenizedChunk& part = parts[t];
            for (int64_t d = first_doc[t]; d < first_doc[t + 1]; ++d) {
                const int64_t begin = chunk.starts[d], end = chunk.starts[d + 1] - 1;  // without the end byte
                int64_t prompt_end = begin;
                while (!chunk.counted.empty() && prompt_end < end && chunk.counted[prompt_end] == 0) ++prompt_end;
                for (const auto& [from, to, counts] :
                     {std::tuple{begin, prompt_end, uint8_t{0}}, std::tuple{prompt_end, end, uint8_t{1}}}) {
                    if (from == to) continue;
                    const std::vector<int32_t> ids = tokenizer.encode(chunk.bytes.substr(from, to - from));
                    part.ids.insert(part.ids.end(), ids.begin(), ids.end());
                    part.counted.insert(part.counted.end(), ids.size(), counts);
                }
                part.ids.push_back(end_token);
                part.counted.push_back(1);
                part.ends.push_back(static_cast<int64_t>(part.ids.size()));
            }
        } catch (const std::exception& e) {
            errors[t] = e.what();
        }
    };
    std::vector<std::thread> workers;
    for (int64_t t = 1; t < threads; ++t) workers.emplace_back(run, t);
    run(0);
    for (auto& w : workers) w.join();
    for (const auto& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
    TokenizedChunk out;
    for (auto& part : parts) {
        const auto offset = static_cast<int64_t>(out.ids.size());
        out.ids.insert(out.ids.end(), part.ids.begin(), part.ids.end());
        out.counted.insert(out.counted.end(), part.counted.begin(), part.counted.end());
        for (int64_t end : part.ends) out.ends.push_back(offset + end);
    }
    return out;
}

}  // namespace trainbench
