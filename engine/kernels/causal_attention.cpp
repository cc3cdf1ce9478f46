// Causal attention node. Per head, with K = [Kn | Kr] (Kn from kv, Kr the shared k_pe) and
// P = softmax(scale Q K^T) under the causal mask:
//   O = P V;  dV = P^T dO;  dP = dO V^T;  dS = P (dP - rowsum(dO O));  dQ = scale dS K;
//   dK = scale dS^T Q.
// Queries go in blocks of kQueryBlock rows, each against the keys up to its last row, so the
// scores need a block's rows only and skip most of the masked half. Heads (b, h) are the
// parallel tasks; each writes its own rows of dQ, dK and dV.
#include "kernels/causal_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/blas.h"
#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"
#include "kernels/softmax_row.h"
#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kQueryBlock = 64;
// The backward's row: p = exp(s - lse) into the score row, dS = p (dP - delta) into dP's.
template <typename T>
inline void softmaxBackwardRowImpl(T* score, T* dp, int64_t valid, int64_t total, T lse, T delta) {
#pragma GCC ivdep
    for (int64_t j = 0; j < valid; ++j) {
        const T p = expApprox(score[j] - lse);
        score[j] = p;
        dp[j] = p * (dp[j] - delta);
    }
    for (int64_t j = valid; j < total; ++j) score[j] = dp[j] = 0;
}

// A block of score rows [rows, keys] for queries first_query.. : softmax, log-sum-exp out.
template <typename T>
inline void softmaxBlockImpl(T* scores, int64_t rows, int64_t first_query, int64_t keys, T* lse) {
    for (int64_t i = 0; i < rows; ++i) lse[i] = softmaxRowImpl(scores + i * keys, first_query + i + 1, keys);
}
template <typename T>
inline void softmaxBackwardBlockImpl(T* scores, T* dp, int64_t rows, int64_t first_query, int64_t keys, const T* lse,
                                     const T* delta) {
    for (int64_t i = 0; i < rows; ++i)
        softmaxBackwardRowImpl(scores + i * keys, dp + i * keys, first_query + i + 1, keys, lse[i], delta[i]);
}

TRAINBENCH_VECTOR_VARIANTS(softmaxBlock, softmaxBlockImpl,
                           (float* scores, int64_t rows, int64_t first_query, int64_t keys, float* lse),
                           (scores, rows, first_query, keys, lse))
void softmaxBlock(double* scores, int64_t rows, int64_t first_query, int64_t keys, double* lse) {
    softmaxBlockImpl(scores, rows, first_query, keys, lse);
}
TRAINBENCH_VECTOR_VARIANTS(softmaxBackwardBlock, softmaxBackwardBlockImpl,
                           (float* scores, float* dp, int64_t rows, int64_t first_query, int64_t keys,
                            const float* lse, const float* delta),
                           (scores, dp, rows, first_query, keys, lse, delta))
void softmaxBackwardBlock(double* scores, double* dp, int64_t rows, int64_t first_query, int64_t keys,
                          const double* lse, const double* delta) {
    softmaxBackwardBlockImpl(scores, dp, rows, first_query, keys, lse, delta);
}

// A [B, T, h, D] tensor's element (b, t, h, 0) is at data + b sb + t st + h sh.
struct Heads {
    int64_t sb, st, sh;
    template <typename T>
    T* at(const torch::Tensor& x, int64_t b, int64_t h) const {
        return x.data_ptr<T>() + b * sb + h * sh;
    }
};
Heads headsOf(const torch::Tensor& x) { return {x.stride(0), x.stride(1), x.size(2) > 1 ? x.stride(2) : 0}; }

// Heads per parallel task: about 64k multiply-adds of scores each, at least one head.
int64_t headGrain(int64_t T, int64_t D) { return itemsPerTask(T * T * D / 2, 65536); }

// The shapes of one call: the key's n channels from kv (the values follow them there), its
// r channels from the shared k_pe.
struct Dims {
    int64_t B, T, H, n, r, Dv;
};
Dims dimsOf(const torch::Tensor& q, const torch::Tensor& kv, int64_t nope) {
    return {q.size(0), q.size(1), q.size(2), nope, q.size(3) - nope, kv.size(3) - nope};
}

// Head (b, h)'s key as T dense rows of n + r: its n channels from kv, the shared r from k_pe.
// One copy of T (n + r) values, so that each product below is one call over the whole key.
template <typename T>
inline void assembleKey(const Dims& d, const T* KV, int64_t skv, const T* KP, int64_t skp, T* key) {
    const int64_t Dk = d.n + d.r;
    for (int64_t t = 0; t < d.T; ++t) {
        for (int64_t c = 0; c < d.n; ++c) key[t * Dk + c] = KV[t * skv + c];
        for (int64_t c = 0; c < d.r; ++c) key[t * Dk + d.n + c] = KP[t * skp + c];
    }
}

class CpuCausalAttention : public torch::autograd::Function<CpuCausalAttention> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& kv,
                                 const torch::Tensor& k_pe, int64_t nope, double scale) {
        const Dims d = dimsOf(q, kv, nope);
        const int64_t B = d.B, T = d.T, H = d.H, Dv = d.Dv;
        auto out = at::empty({B, T, H, Dv}, q.options());
        auto lse = at::empty({B, H, T}, q.options());
        const Heads hq = headsOf(q), hkv = headsOf(kv), hkp = headsOf(k_pe), ho = headsOf(out);
        AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "trainbench_causal_attention", [&] {
            const int64_t Dk = d.n + d.r;
            parallelFor(0, B * H, headGrain(T, Dk), [&](int64_t first, int64_t last) {
                std::vector<scalar_t> scores(std::min(kQueryBlock, T) * T), key(T * Dk);
                for (int64_t task = first; task < last; ++task) {
                    const int64_t b = task / H, h = task % H;
                    const scalar_t *Q = hq.at<scalar_t>(q, b, h), *KV = hkv.at<scalar_t>(kv, b, h),
                                   *KP = hkp.at<scalar_t>(k_pe, b, 0), *V = KV + nope;
                    scalar_t* O = ho.at<scalar_t>(out, b, h);
                    scalar_t* L = lse.data_ptr<scalar_t>() + (b * H + h) * T;
                    assembleKey(d, KV, hkv.st, KP, hkp.st, key.data());
                    for (int64_t q0 = 0; q0 < T; q0 += kQueryBlock) {
                        const int64_t rows = std::min(kQueryBlock, T - q0), keys = q0 + rows;
                        gemm(false, true, rows, keys, Dk, scalar_t(scale), Q + q0 * hq.st, hq.st, key.data(), Dk,
                             scalar_t(0), scores.data(), keys);
                        softmaxBlock(scores.data(), rows, q0, keys, L + q0);
                        gemm(false, false, rows, Dv, keys, scalar_t(1), scores.data(), keys, V, hkv.st, scalar_t(0),
                             O + q0 * ho.st, ho.st);
                    }
                }
            });
        });
        ctx->save_for_backward({q, kv, k_pe, out, lse});
        ctx->saved_data["nope"] = nope;
        ctx->saved_data["scale"] = scale;
        saveProductPrecision(ctx);
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const ProductPrecisionScope precision(savedProductPrecision(ctx));
        const auto saved = ctx->get_saved_variables();
        const auto &q = saved[0], &kv = saved[1], &k_pe = saved[2], &out = saved[3], &lse = saved[4];
        const int64_t nope = ctx->saved_data["nope"].toInt();
        const double scale = ctx->saved_data["scale"].toDouble();
        const Dims d = dimsOf(q, kv, nope);
        const int64_t B = d.B, T = d.T, H = d.H, Dv = d.Dv, n = d.n, r = d.r;
        const auto g = grads[0].contiguous();
        auto gq = at::empty({B, T, H, n + r}, q.options());
        // The value's gradient in kv's own layout, beside the key's: one tensor, no join.
        auto gkv = at::empty({B, T, H, n + Dv}, q.options());
        // The shared k_pe's, per head first (heads run in parallel), then summed in head order.
        auto gkp_heads = at::empty({B, T, H, r}, q.options());
        const Heads hq = headsOf(q), hkv = headsOf(kv), hkp = headsOf(k_pe), ho = headsOf(out), hg = headsOf(g),
                    hgq = headsOf(gq), hgkv = headsOf(gkv), hgkp = headsOf(gkp_heads);
        AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "trainbench_causal_attention_backward", [&] {
            const int64_t Dk = n + r;
            parallelFor(0, B * H, headGrain(T, Dk), [&](int64_t first, int64_t last) {
                const int64_t block = std::min(kQueryBlock, T);
                std::vector<scalar_t> scores(block * T), dp(block * T), delta(T), key(T * Dk), gkey(T * Dk),
                    gvalue(T * Dv);
                const scalar_t s = scalar_t(scale);
                for (int64_t task = first; task < last; ++task) {
                    const int64_t b = task / H, h = task % H;
                    const scalar_t *Q = hq.at<scalar_t>(q, b, h), *KV = hkv.at<scalar_t>(kv, b, h),
                                   *KP = hkp.at<scalar_t>(k_pe, b, 0), *V = KV + n, *O = ho.at<scalar_t>(out, b, h),
                                   *G = hg.at<scalar_t>(g, b, h);
                    const scalar_t* L = lse.data_ptr<scalar_t>() + (b * H + h) * T;
                    scalar_t *GQ = hgq.at<scalar_t>(gq, b, h), *GK = hgkv.at<scalar_t>(gkv, b, h),
                             *GKP = hgkp.at<scalar_t>(gkp_heads, b, h);
                    for (int64_t t = 0; t < T; ++t) {
                        scalar_t sum = 0;
                        for (int64_t j = 0; j < Dv; ++j) sum += G[t * hg.st + j] * O[t * ho.st + j];
                        delta[t] = sum;
                    }
                    assembleKey(d, KV, hkv.st, KP, hkp.st, key.data());
                    std::fill(gkey.begin(), gkey.end(), scalar_t(0));
                    std::fill(gvalue.begin(), gvalue.end(), scalar_t(0));
                    for (int64_t q0 = 0; q0 < T; q0 += kQueryBlock) {
                        const int64_t rows = std::min(kQueryBlock, T - q0), keys = q0 + rows;
                        gemm(false, true, rows, keys, Dk, s, Q + q0 * hq.st, hq.st, key.data(), Dk, scalar_t(0),
                             scores.data(), keys);
                        gemm(false, true, rows, keys, Dv, scalar_t(1), G + q0 * hg.st, hg.st, V, hkv.st, scalar_t(0),
                             dp.data(), keys);
                        softmaxBackwardBlock(scores.data(), dp.data(), rows, q0, keys, L + q0, delta.data() + q0);
                        // dV += P^T dO, dQ = scale dS K, dK += scale dS^T Q.
                        gemm(true, false, keys, Dv, rows, scalar_t(1), scores.data(), keys, G + q0 * hg.st, hg.st,
                             scalar_t(1), gvalue.data(), Dv);
                        gemm(false, false, rows, Dk, keys, s, dp.data(), keys, key.data(), Dk, scalar_t(0),
                             GQ + q0 * hgq.st, hgq.st);
                        gemm(true, false, keys, Dk, rows, s, dp.data(), keys, Q + q0 * hq.st, hq.st, scalar_t(1),
                             gkey.data(), Dk);
                    }
                    // The key's gradient back where its parts came from; the value's beside it.
                    for (int64_t t = 0; t < T; ++t) {
                        for (int64_t c = 0; c < n; ++c) GK[t * hgkv.st + c] = gkey[t * Dk + c];
                        for (int64_t c = 0; c < Dv; ++c) GK[t * hgkv.st + n + c] = gvalue[t * Dv + c];
                        for (int64_t c = 0; c < r; ++c) GKP[t * hgkp.st + c] = gkey[t * Dk + n + c];
                    }
                }
            });
        });
        // Summed over heads in head order: [B, T, 1, r] as k_pe came.
        auto gkp = at::empty({B, T, 1, r}, q.options());
        AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "trainbench_causal_attention_rope_key", [&] {
            const scalar_t* P = gkp_heads.data_ptr<scalar_t>();
            scalar_t* OUT = gkp.data_ptr<scalar_t>();
            for (int64_t bt = 0; bt < B * T; ++bt)
                for (int64_t c = 0; c < r; ++c) {
                    scalar_t sum = 0;
                    for (int64_t h = 0; h < H; ++h) sum += P[(bt * H + h) * r + c];
                    OUT[bt * r + c] = sum;
                }
        });
        return {gq, gkv, gkp.view(k_pe.sizes()), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

bool causalAttentionTakes(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& k_pe, int64_t nope) {
    if (q.dim() != 4 || kv.dim() != 4 || k_pe.dim() != 4) return false;
    if (nope < 0 || nope > q.size(3) || nope > kv.size(3)) return false;
    for (int i = 0; i < 3; ++i)
        if (kv.size(i) != q.size(i)) return false;
    if (k_pe.size(0) != q.size(0) || k_pe.size(1) != q.size(1) || k_pe.size(2) != 1 || k_pe.size(3) != q.size(3) - nope)
        return false;
    for (const auto* t : {&q, &kv, &k_pe})
        if (t->stride(3) != 1 && t->size(3) > 1) return false;
    return cpuKernelsTake({&q, &kv, &k_pe});
}

torch::Tensor causalAttention(const torch::Tensor& q, const torch::Tensor& kv, const torch::Tensor& k_pe, int64_t nope,
                              double scale) {
    return CpuCausalAttention::apply(q, kv, k_pe, nope, scale);
}

}  // namespace trainbench::kernels
