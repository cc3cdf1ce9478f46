// Router node: per token the scores, the groups and experts chosen and the weights in one
// pass; per sequence the balance loss; the backward one pass per token.
#include "kernels/router.h"

#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"
#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The index of the largest of values[0..n) that `open` admits, the lower index on ties; -1 if
// none is open. A NaN is never larger, but is taken when nothing else is open.
template <typename T, typename Open>
inline int64_t largestOpen(const T* values, int64_t n, Open open) {
    int64_t best = -1;
    for (int64_t e = 0; e < n; ++e)
        if (open(e) && (best < 0 || values[e] > values[best])) best = e;
    return best;
}

// Tokens [begin, end): scores s (no bias) into S, the k chosen into I (best first), weights into W.
template <typename T>
void chooseTokens(const T* logits, const T* bias, int64_t E, const RouterOptions& o, T* S, int64_t* I, T* W,
                  int64_t begin, int64_t end) {
    const int64_t k = o.topk, G = o.groups, per = E / G;
    std::vector<T> selection(E), group_score(G);
    std::vector<char> open(E), group_open(G), taken(E);
    for (int64_t t = begin; t < end; ++t) {
        const T* l = logits + t * E;
        T* s = S + t * E;
        if (o.sigmoid) {
            for (int64_t e = 0; e < E; ++e) s[e] = sigmoid(l[e]);
        } else {
            T top = l[0];
            for (int64_t e = 1; e < E; ++e) top = l[e] > top ? l[e] : top;
            T sum = 0;
            for (int64_t e = 0; e < E; ++e) sum += (s[e] = expApprox(l[e] - top));
            for (int64_t e = 0; e < E; ++e) s[e] /= sum;
        }
        for (int64_t e = 0; e < E; ++e) selection[e] = bias ? s[e] + bias[e] : s[e];
        std::fill(open.begin(), open.end(), 1);
        if (G > 1) {
            for (int64_t g = 0; g < G; ++g) {
                const T* v = selection.data() + g * per;
                // With a bias the group's two best summed, else its best (the reference's rule).
                T first = -std::numeric_limits<T>::infinity(), second = first;
                for (int64_t j = 0; j < per; ++j) {
                    if (v[j] > first) {
                        second = first;
                        first = v[j];
                    } else if (v[j] > second) {
                        second = v[j];
                    }
                }
                group_score[g] = bias && per > 1 ? first + second : first;
            }
            std::fill(group_open.begin(), group_open.end(), 0);
            for (int64_t j = 0; j < o.limited_groups; ++j) {
                const int64_t g = largestOpen(group_score.data(), G, [&](int64_t i) { return !group_open[i]; });
                group_open[g] = 1;
            }
            for (int64_t e = 0; e < E; ++e) open[e] = group_open[e / per];
        }
        std::fill(taken.begin(), taken.end(), 0);
        int64_t* chosen = I + t * k;
        for (int64_t j = 0; j < k; ++j) {
            int64_t e = largestOpen(selection.data(), E, [&](int64_t i) { return open[i] && !taken[i]; });
            if (e < 0) e = largestOpen(selection.data(), E, [&](int64_t i) { return !taken[i]; });  // k > open experts
            taken[e] = 1;
            chosen[j] = e;
        }
        T* w = W + t * k;
        T sum = 0;
        for (int64_t j = 0; j < k; ++j) sum += (w[j] = s[chosen[j]]);
        for (int64_t j = 0; j < k; ++j) w[j] = (o.sigmoid ? w[j] / sum : w[j]) * T(o.route_scale);
    }
}

// Sequences [begin, end) of T tokens: f (E / (k T) times the tokens routed to each expert) into
// F, aux_alpha sum_e f_e mean_t s_te / Z_t into A.
template <typename T>
void balanceSequences(const T* S, const int64_t* I, int64_t E, int64_t T_len, const RouterOptions& o, T* F, T* A,
                      int64_t begin, int64_t end) {
    const int64_t k = o.topk;
    std::vector<T> mean(E);
    for (int64_t b = begin; b < end; ++b) {
        T* f = F + b * E;
        std::fill(f, f + E, T(0));
        std::fill(mean.begin(), mean.end(), T(0));
        for (int64_t t = b * T_len; t < (b + 1) * T_len; ++t) {
            for (int64_t j = 0; j < k; ++j) f[I[t * k + j]] += T(1);
            const T* s = S + t * E;
            T z = 0;
            for (int64_t e = 0; e < E; ++e) z += s[e];
            for (int64_t e = 0; e < E; ++e) mean[e] += s[e] / z;
        }
        T aux = 0;
        for (int64_t e = 0; e < E; ++e) {
            f[e] *= T(E) / T(k * T_len);
            aux += f[e] * (mean[e] / T(T_len));
        }
        A[b] = T(o.aux_alpha) * aux;
    }
}

// dL/dlogits for tokens [begin, end) into GL; GW, GS, GA may be null (no gradient came).
template <typename T>
void backTokens(const T* S, const int64_t* I, const T* F, const T* GW, const T* GS, const T* GA, int64_t E,
                int64_t T_len, const RouterOptions& o, T* GL, int64_t begin, int64_t end) {
    const int64_t k = o.topk;
    const T c = T(o.route_scale);
    for (int64_t t = begin; t < end; ++t) {
        const T* s = S + t * E;
        const int64_t* chosen = I + t * k;
        T* ds = GL + t * E;  // dL/ds first, turned into dL/dl in place
        for (int64_t e = 0; e < E; ++e) ds[e] = GS ? GS[t * E + e] : T(0);
        if (GA && F) {
            const int64_t b = t / T_len;
            const T* f = F + b * E;
            T z = 0, dot = 0;
            for (int64_t e = 0; e < E; ++e) z += s[e];
            for (int64_t e = 0; e < E; ++e) dot += f[e] * s[e];
            dot /= z;
            const T scale = T(o.aux_alpha) * GA[b] / T(T_len);
            for (int64_t e = 0; e < E; ++e) ds[e] += scale * (f[e] - dot) / z;
        }
        if (GW) {
            const T* g = GW + t * k;
            if (o.sigmoid) {
                T sum = 0, dot = 0;
                for (int64_t j = 0; j < k; ++j) sum += s[chosen[j]];
                for (int64_t j = 0; j < k; ++j) dot += g[j] * s[chosen[j]];
                dot /= sum;
                for (int64_t j = 0; j < k; ++j) ds[chosen[j]] += c * (g[j] - dot) / sum;
            } else {
                for (int64_t j = 0; j < k; ++j) ds[chosen[j]] += c * g[j];
            }
        }
        if (o.sigmoid) {
            for (int64_t e = 0; e < E; ++e) ds[e] *= s[e] * (T(1) - s[e]);
        } else {
            T dot = 0;
            for (int64_t e = 0; e < E; ++e) dot += ds[e] * s[e];
            for (int64_t e = 0; e < E; ++e) ds[e] = s[e] * (ds[e] - dot);
        }
    }
}

class CpuRouter : public torch::autograd::Function<CpuRouter> {
public:
    static variable_list forward(AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& bias_in,
                                 RouterOptions o) {
        auto logits = input.contiguous();
        const int64_t N = logits.size(0), E = logits.size(1), B = o.sequences, T_len = B > 0 ? N / B : 0;
        // No bias comes as an empty tensor: autograd's apply takes no undefined inputs.
        auto bias = bias_in.numel() > 0 ? bias_in.to(logits.scalar_type()).contiguous() : torch::Tensor();
        auto scores = at::empty({N, E}, logits.options());
        auto weights = at::empty({N, o.topk}, logits.options());
        auto indices = at::empty({N, o.topk}, logits.options().dtype(torch::kInt64));
        torch::Tensor f, aux;
        if (B > 0) {
            f = at::empty({B, E}, logits.options());
            aux = at::empty({B}, logits.options());
        }
        AT_DISPATCH_FLOATING_TYPES(logits.scalar_type(), "trainbench_router", [&] {
            const scalar_t* L = logits.data_ptr<scalar_t>();
            const scalar_t* BIAS = bias.defined() ? bias.data_ptr<scalar_t>() : nullptr;
            scalar_t *S = scores.data_ptr<scalar_t>(), *W = weights.data_ptr<scalar_t>();
            int64_t* I = indices.data_ptr<int64_t>();
            parallelFor(0, N, itemsPerTask(8 * E), [&](int64_t begin, int64_t end) {
                chooseTokens(L, BIAS, E, o, S, I, W, begin, end);
            });
            if (B > 0) {
                scalar_t *F = f.data_ptr<scalar_t>(), *A = aux.data_ptr<scalar_t>();
                parallelFor(0, B, itemsPerTask(4 * E * T_len), [&](int64_t begin, int64_t end) {
                    balanceSequences(S, I, E, T_len, o, F, A, begin, end);
                });
            }
        });
        ctx->set_materialize_grads(false);  // an unused output's gradient stays undefined, not zeros
        ctx->mark_non_differentiable({indices});
        ctx->save_for_backward({scores, indices, f});  // k is indices' width, the sequences f's rows
        ctx->saved_data["sigmoid"] = o.sigmoid;
        ctx->saved_data["route_scale"] = o.route_scale;
        ctx->saved_data["aux_alpha"] = o.aux_alpha;
        if (B > 0) return {weights, indices, scores, aux};
        return {weights, indices, scores};
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        const auto &scores = saved[0], &indices = saved[1], &f = saved[2];
        RouterOptions o;
        o.topk = indices.size(1);
        o.sigmoid = ctx->saved_data["sigmoid"].toBool();
        o.route_scale = ctx->saved_data["route_scale"].toDouble();
        o.sequences = f.defined() ? f.size(0) : 0;
        o.aux_alpha = ctx->saved_data["aux_alpha"].toDouble();
        const int64_t N = scores.size(0), E = scores.size(1), T_len = o.sequences > 0 ? N / o.sequences : 0;
        auto dense = [](const torch::Tensor& g) { return g.defined() ? g.contiguous() : g; };
        const auto gw = dense(grads[0]), gs = dense(grads[2]);
        const auto ga = grads.size() > 3 ? dense(grads[3]) : torch::Tensor();
        auto grad_logits = at::empty_like(scores);
        AT_DISPATCH_FLOATING_TYPES(scores.scalar_type(), "trainbench_router_backward", [&] {
            auto ptr = [](const torch::Tensor& x) { return x.defined() ? x.data_ptr<scalar_t>() : nullptr; };
            const scalar_t *S = ptr(scores), *F = ptr(f), *GW = ptr(gw), *GS = ptr(gs), *GA = ptr(ga);
            const int64_t* I = indices.data_ptr<int64_t>();
            scalar_t* GL = grad_logits.data_ptr<scalar_t>();
            parallelFor(0, N, itemsPerTask(8 * E), [&](int64_t begin, int64_t end) {
                backTokens(S, I, F, GW, GS, GA, E, T_len, o, GL, begin, end);
            });
        });
        return {grad_logits, torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

bool routerTakes(const torch::Tensor& logits, const torch::Tensor& bias, const RouterOptions& o) {
    if (logits.dim() != 2 || o.topk < 1 || o.groups < 1 || o.limited_groups < 1 || o.limited_groups > o.groups)
        return false;
    const int64_t N = logits.size(0), E = logits.size(1);
    if (E < o.topk || E % o.groups != 0 || (o.sequences > 0 && N % o.sequences != 0)) return false;
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != E || bias.device() != logits.device())) return false;
    return cpuKernelsTake({&logits});
}

RoutedTokens route(const torch::Tensor& logits, const torch::Tensor& bias, const RouterOptions& options) {
    if (!routerTakes(logits, bias, options)) throw std::invalid_argument("route: logits, bias or options it cannot take");
    auto out = CpuRouter::apply(logits, bias.defined() ? bias : at::empty({0}, logits.options()), options);
    RoutedTokens r{out[0], out[1], out[2], {}};
    if (out.size() > 3) r.seq_aux = out[3];
    return r;
}

}  // namespace trainbench::kernels
