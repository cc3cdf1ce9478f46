// Expert dispatch and combine: a counting sort of the choices, then gathers and weighted adds
// by row, each token's rows taken in the grouped order so that every sum has one fixed order.
#include "kernels/expert_dispatch.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"
#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Token t's k rows, ascending (k is small: an insertion sort).
inline void rowsOfToken(const int64_t* row_of, int64_t t, int64_t k, int64_t* rows) {
    for (int64_t j = 0; j < k; ++j) {
        const int64_t r = row_of[t * k + j];
        int64_t i = j;
        for (; i > 0 && rows[i - 1] > r; --i) rows[i] = rows[i - 1];
        rows[i] = r;
    }
}

constexpr int64_t kMaxTopK = 64;  // a token's rows live on the stack

class CpuDispatchRows : public torch::autograd::Function<CpuDispatchRows> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& token_of,
                                 const torch::Tensor& row_of) {
        auto x = input.contiguous();
        const int64_t rows = token_of.size(0), d = x.size(1), bytes = d * x.element_size();
        auto out = at::empty({rows, d}, x.options());
        const int64_t* TOK = token_of.data_ptr<int64_t>();
        const char* X = static_cast<const char*>(x.data_ptr());
        char* OUT = static_cast<char*>(out.data_ptr());
        parallelFor(0, rows, itemsPerTask(d), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) std::memcpy(OUT + r * bytes, X + TOK[r] * bytes, bytes);
        });
        ctx->save_for_backward({row_of});
        ctx->saved_data["tokens"] = x.size(0);
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto row_of = ctx->get_saved_variables()[0];
        const int64_t N = ctx->saved_data["tokens"].toInt(), k = N > 0 ? row_of.size(0) / N : 0;
        const auto g = grads[0].contiguous();
        const int64_t d = g.size(1);
        auto gx = at::empty({N, d}, g.options());
        AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "trainbench_dispatch_rows_backward", [&] {
            const scalar_t* G = g.data_ptr<scalar_t>();
            scalar_t* GX = gx.data_ptr<scalar_t>();
            const int64_t* ROW = row_of.data_ptr<int64_t>();
            parallelFor(0, N, itemsPerTask(k * d), [&](int64_t begin, int64_t end) {
                int64_t rows[kMaxTopK];
                for (int64_t t = begin; t < end; ++t) {
                    rowsOfToken(ROW, t, k, rows);
                    scalar_t* out = GX + t * d;
                    const scalar_t* first = G + rows[0] * d;
                    for (int64_t c = 0; c < d; ++c) out[c] = first[c];
                    for (int64_t j = 1; j < k; ++j) {
                        const scalar_t* next = G + rows[j] * d;
                        for (int64_t c = 0; c < d; ++c) out[c] += next[c];
                    }
                }
            });
        });
        return {gx, torch::Tensor(), torch::Tensor()};
    }
};

class CpuCombineRows : public torch::autograd::Function<CpuCombineRows> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& base_in, const torch::Tensor& expert_in,
                                 const torch::Tensor& weights_in, const torch::Tensor& slot_of,
                                 const torch::Tensor& token_of, const torch::Tensor& row_of) {
        auto base = base_in.contiguous(), expert_out = expert_in.contiguous(), weights = weights_in.contiguous();
        const int64_t N = base.size(0), d = base.size(1), k = weights.size(1);
        auto y = at::empty({N, d}, base.options());
        AT_DISPATCH_FLOATING_TYPES(base.scalar_type(), "trainbench_combine_rows", [&] {
            const scalar_t *BASE = base.data_ptr<scalar_t>(), *EO = expert_out.data_ptr<scalar_t>(),
                           *W = weights.data_ptr<scalar_t>();
            const int64_t *SLOT = slot_of.data_ptr<int64_t>(), *ROW = row_of.data_ptr<int64_t>();
            scalar_t* Y = y.data_ptr<scalar_t>();
            parallelFor(0, N, itemsPerTask(k * d), [&](int64_t begin, int64_t end) {
                int64_t rows[kMaxTopK];
                for (int64_t t = begin; t < end; ++t) {
                    rowsOfToken(ROW, t, k, rows);
                    scalar_t* out = Y + t * d;
                    for (int64_t c = 0; c < d; ++c) out[c] = BASE[t * d + c];
                    for (int64_t j = 0; j < k; ++j) {
                        const scalar_t* e = EO + rows[j] * d;
                        const scalar_t w = W[SLOT[rows[j]]];
                        for (int64_t c = 0; c < d; ++c) out[c] += e[c] * w;
                    }
                }
            });
        });
        ctx->save_for_backward({expert_out, weights, slot_of, token_of});
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const auto &expert_out = saved[0], &weights = saved[1], &slot_of = saved[2], &token_of = saved[3];
        const auto g = grads[0].contiguous();
        const int64_t rows = expert_out.size(0), d = expert_out.size(1);
        auto g_expert = at::empty_like(expert_out);
        auto g_weights = at::empty_like(weights);
        AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "trainbench_combine_rows_backward", [&] {
            const scalar_t *G = g.data_ptr<scalar_t>(), *EO = expert_out.data_ptr<scalar_t>(),
                           *W = weights.data_ptr<scalar_t>();
            const int64_t *SLOT = slot_of.data_ptr<int64_t>(), *TOK = token_of.data_ptr<int64_t>();
            scalar_t *GE = g_expert.data_ptr<scalar_t>(), *GW = g_weights.data_ptr<scalar_t>();
            parallelFor(0, rows, itemsPerTask(2 * d), [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                    const scalar_t* gt = G + TOK[r] * d;
                    const scalar_t w = W[SLOT[r]];
                    scalar_t* out = GE + r * d;
                    for (int64_t c = 0; c < d; ++c) out[c] = gt[c] * w;
                    GW[SLOT[r]] = sumOfProducts(gt, EO + r * d, d);  // each slot has one row: no two write one place
                }
            });
        });
        return {g, g_expert, g_weights, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

bool expertDispatchTakes(const torch::Tensor& x, const torch::Tensor& weights, const torch::Tensor& indices) {
    return x.dim() == 2 && weights.dim() == 2 && indices.dim() == 2 && weights.sizes() == indices.sizes() &&
           weights.size(0) == x.size(0) && weights.size(1) >= 1 && weights.size(1) <= kMaxTopK &&
           indices.scalar_type() == torch::kInt64 && indices.device().is_cpu() &&
           x.scalar_type() == weights.scalar_type() && cpuKernelsTake({&x, &weights});
}

ExpertOrder sortByExpert(const torch::Tensor& indices_in, int64_t experts) {
    auto indices = indices_in.contiguous();
    const int64_t slots = indices.numel(), k = indices.size(1);
    const auto options = indices.options().dtype(torch::kInt64);
    ExpertOrder o{at::zeros({experts}, options), at::empty({slots}, options), at::empty({slots}, options),
                  at::empty({slots}, options)};
    const int64_t* expert = indices.data_ptr<int64_t>();
    int64_t *count = o.counts.data_ptr<int64_t>(), *slot_of = o.slot_of.data_ptr<int64_t>(),
            *token_of = o.token_of.data_ptr<int64_t>(), *row_of = o.row_of.data_ptr<int64_t>();
    for (int64_t s = 0; s < slots; ++s) {
        if (expert[s] < 0 || expert[s] >= experts) throw std::invalid_argument("sortByExpert: an expert out of range");
        ++count[expert[s]];
    }
    std::vector<int64_t> next(experts, 0);
    for (int64_t e = 1; e < experts; ++e) next[e] = next[e - 1] + count[e - 1];
    for (int64_t s = 0; s < slots; ++s) {
        const int64_t r = next[expert[s]]++;
        slot_of[r] = s;
        token_of[r] = s / k;
        row_of[s] = r;
    }
    return o;
}

torch::Tensor dispatchRows(const torch::Tensor& x, const ExpertOrder& order) {
    return CpuDispatchRows::apply(x, order.token_of, order.row_of);
}

torch::Tensor combineRows(const torch::Tensor& base, const torch::Tensor& expert_out, const torch::Tensor& weights,
                          const ExpertOrder& order) {
    return CpuCombineRows::apply(base, expert_out, weights, order.slot_of, order.token_of, order.row_of);
}

}  // namespace trainbench::kernels
