// The attention cache of decoding: what each layer keeps of the tokens already seen, so a new
// token attends to them without running them again. Rows are sequences (prompts); each row
// fills from position 0 at its own pace.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace trainbench {

// How MLA's keys and values are kept (docs/design/model.md, decoding):
// - Naive: the per-head keys [rows, S, h, n + r] and values [rows, S, h, v], as the training
//   form computes them.
// - Absorbed: only the normalised latent [rows, S, c] and the rotated shared key [rows, S, r];
//   the key up-projection is folded into the query and the value up-projection into the output.
enum class CacheForm { Naive, Absorbed };

struct LayerCache {
    torch::Tensor keys, values;      // naive
    torch::Tensor latent, rope_key;  // absorbed
};

struct KvCache {
    CacheForm form = CacheForm::Naive;
    int64_t rows = 0;
    int64_t capacity = 0;  // positions per row (model.max_seq_len)
    std::vector<LayerCache> layers;
};

}  // namespace trainbench
