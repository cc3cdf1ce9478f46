// Row-major products through the Fortran BLAS interface (column-major): C^T = op(B)^T op(A)^T,
// so the operands swap places and keep their flags.
#include "kernels/blas.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bf16_rounding.h"
#include "kernels/onednn_product.h"
#include "kernels/parallel.h"
#include "kernels/product_precision.h"

extern "C" {
// Exported by libtorch_cpu (its statically linked MKL), 32-bit integers (LP64).
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc);
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc);
#if defined(__x86_64__)
// MKL's per-thread thread count for its next calls (0: back to the global one); returns the
// previous setting. (The x86 wheels link MKL; elsewhere the rule below is left out.)
int mkl_set_num_threads_local_(const int* threads);
#endif
}

namespace trainbench::kernels {
namespace {

constexpr double kAloneBelow = double(1 << 20);

int narrow(int64_t v) {
    if (v < 0 || v > std::numeric_limits<int>::max())
        throw std::invalid_argument("matrix dimension " + std::to_string(v) + " outside what BLAS takes");
    return static_cast<int>(v);
}

// k = 0: C = beta C, which BLAS would also do, but it refuses a leading dimension of 0.
template <typename T>
bool trivial(int64_t m, int64_t n, int64_t k, T beta, T* c, int64_t ldc) {
    if (m == 0 || n == 0) return true;
    if (k > 0) return false;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return true;
}

enum class Threads { kBlasChooses, kCallerAlone };

template <typename T, typename Blas>
void rowMajor(Blas blas, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
              int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc,
              Threads threads = Threads::kBlasChooses) {
    if (trivial(m, n, k, beta, c, ldc)) return;
    const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
    const int M = narrow(n), N = narrow(m), K = narrow(k);
    // A leading dimension is at least the stored rows' length and at least 1.
    const int LDB = narrow(std::max<int64_t>(ldb, 1)), LDA = narrow(std::max<int64_t>(lda, 1)),
              LDC = narrow(std::max<int64_t>(ldc, 1));
    // A product of fewer than kAloneBelow multiply-adds runs on the calling thread: waking the
    // other threads (often asleep between a small model's many short calls) costs more than
    // they save. Measured on tiny (docs/BENCHMARKS.md): 2^20 is 5-12 % faster a step than MKL's
    // own choice at every split, 2^22 already slower.
#if defined(__x86_64__)
    const bool alone = threads == Threads::kCallerAlone || double(m) * double(n) * double(k) < kAloneBelow;
    const int one = 1;
    int previous = alone ? mkl_set_num_threads_local_(&one) : 0;
#endif
    blas(&tb, &ta, &M, &N, &K, &alpha, b, &LDB, a, &LDA, &beta, c, &LDC);
#if defined(__x86_64__)
    if (alone) mkl_set_num_threads_local_(&previous);
#endif
}

// The operands of one bf16 product, packed (row stride = the stored rows' length), and oneDNN's
// bf16 result. Per thread: gemmChains runs products on several at once.
struct Bf16Scratch {
    std::vector<float> a, b;            // rounded values, for the fp32 GEMM
    std::vector<uint16_t> a16, b16, c;  // bit patterns, for oneDNN
};

Bf16Scratch& bf16Scratch() {
    thread_local Bf16Scratch scratch;
    return scratch;
}

// A stored [rows, cols] (rows = m, or k when transposed) as rounded fp32 values, row stride cols.
const float* packRounded(const float* x, int64_t rows, int64_t cols, int64_t ld, std::vector<float>& packed) {
    packed.resize(size_t(rows * cols));
    roundToBf16Values(x, rows, cols, ld, packed.data());
    return packed.data();
}

// oneDNN prepares a primitive per shape it has not seen (about a millisecond: more than the
// product), and the experts' row counts change with every micro-batch: it gets every dimension
// padded with zeros to a multiple of this, so that a run meets a few shapes only.
constexpr int64_t kOneDnnShapeStep = 64;
int64_t padded(int64_t v) { return (v + kOneDnnShapeStep - 1) / kOneDnnShapeStep * kOneDnnShapeStep; }

// A stored [rows, cols] as bf16 bit patterns in a zero-padded [padded_rows, padded_cols].
const uint16_t* packPadded(const float* x, int64_t rows, int64_t cols, int64_t ld, int64_t padded_rows,
                           int64_t padded_cols, std::vector<uint16_t>& packed) {
    packed.resize(size_t(padded_rows * padded_cols));
    roundToBf16(x, rows, cols, ld, packed.data(), padded_cols);
    if (padded_cols > cols)
        for (int64_t r = 0; r < rows; ++r)
            std::fill(packed.begin() + r * padded_cols + cols, packed.begin() + (r + 1) * padded_cols, uint16_t(0));
    std::fill(packed.begin() + rows * padded_cols, packed.end(), uint16_t(0));
    return packed.data();
}

void bf16Call(const Product<float>& p, Threads threads) {
    if (trivial(p.m, p.n, p.k, p.beta, p.c, p.ldc)) return;
    Bf16Scratch& scratch = bf16Scratch();
    const int64_t a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
    const int64_t b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
    if (bf16Route(double(p.m) * double(p.n) * double(p.k)) == Bf16Route::kOneDnn) {
        const int64_t m = padded(p.m), n = padded(p.n), k = padded(p.k);
        const uint16_t* a = packPadded(p.a, a_rows, a_cols, p.lda, p.trans_a ? k : m, p.trans_a ? m : k, scratch.a16);
        const uint16_t* b = packPadded(p.b, b_rows, b_cols, p.ldb, p.trans_b ? n : k, p.trans_b ? k : n, scratch.b16);
        scratch.c.resize(size_t(m * n));
        oneDnnBf16Product(p.trans_a, p.trans_b, m, n, k, p.alpha, a, b, scratch.c.data());
        widenBf16(scratch.c.data(), p.m, p.n, n, p.beta, p.c, p.ldc);
        return;
    }
    const float* a = packRounded(p.a, a_rows, a_cols, p.lda, scratch.a);
    const float* b = packRounded(p.b, b_rows, b_cols, p.ldb, scratch.b);
    rowMajor(sgemm_, p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a, a_cols, b, b_cols, p.beta, p.c, p.ldc, threads);
}

void blasCall(const Product<float>& p, Threads threads) {
    if (productPrecision() == ProductPrecision::kBf16) return bf16Call(p, threads);
    rowMajor(sgemm_, p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc, threads);
}
void blasCall(const Product<double>& p, Threads threads) {
    rowMajor(dgemm_, p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc, threads);
}

template <typename T>
double work(const std::vector<Product<T>>& chain) {
    double total = 0;
    for (const auto& p : chain) total += double(p.m) * double(p.n) * double(p.k);
    return total;
}

template <typename T>
void oneAfterAnother(const std::vector<std::vector<Product<T>>>& chains) {
    for (const auto& chain : chains)
        for (const auto& p : chain) blasCall(p, Threads::kBlasChooses);
}

// Chains below this many multiply-adds in all stay on the calling thread, each product as gemm
// runs it: a parallel region costs more than it saves (the same scale as kAloneBelow).
constexpr double kChainsSplitFrom = double(1 << 19);
// How far above an even share (the work over the threads) the busiest thread may be: beyond,
// one chain dominates or the chains are too few for the threads, and each product is left to
// BLAS, which splits inside it.
constexpr double kBalanceSlack = 1.5;

template <typename T>
void runChains(const std::vector<std::vector<Product<T>>>& chains) {
    const int pool = at::in_parallel_region() ? 1 : at::get_num_threads();
    const int threads = std::min<int>(pool, int(chains.size()));
    if (threads < 2) return oneAfterAnother(chains);
    std::vector<double> works(chains.size());
    for (size_t i = 0; i < chains.size(); ++i) works[i] = work(chains[i]);
    const double total = std::accumulate(works.begin(), works.end(), 0.0);
    if (total < kChainsSplitFrom) return oneAfterAnother(chains);
    // Longest chain first to the least loaded thread: a fixed assignment, so the same shapes
    // always split the same way.
    std::vector<size_t> order(chains.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return works[x] > works[y]; });
    std::vector<std::vector<size_t>> assigned(static_cast<size_t>(threads));
    std::vector<double> load(assigned.size(), 0.0);
    for (size_t i : order) {
        const size_t t = size_t(std::min_element(load.begin(), load.end()) - load.begin());
        assigned[t].push_back(i);
        load[t] += works[i];
    }
    if (*std::max_element(load.begin(), load.end()) > kBalanceSlack * total / pool) return oneAfterAnother(chains);
    parallelFor(0, int64_t(assigned.size()), 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t)
            for (size_t i : assigned[size_t(t)])
                for (const auto& p : chains[i]) blasCall(p, Threads::kCallerAlone);
    });
}

}  // namespace

void gemmChains(const std::vector<std::vector<Product<float>>>& chains) { runChains(chains); }
void gemmChains(const std::vector<std::vector<Product<double>>>& chains) { runChains(chains); }

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    blasCall({trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc}, Threads::kBlasChooses);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    rowMajor(dgemm_, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace trainbench::kernels
