// Matrix products on raw CPU memory, for the kernels with written-out backwards: one BLAS call,
// no operator dispatch, no autograd node, no tensor made (what a product through at::mm costs
// a small model more than the arithmetic: about twenty dispatches per backward).
#pragma once

#include <cstdint>
#include <vector>

namespace trainbench::kernels {

// Row-major C [m, n] = alpha op(A) op(B) + beta C, op(A) [m, k] and op(B) [k, n]. A is stored
// [m, k] (or [k, m] when trans_a), B [k, n] (or [n, k] when trans_b); lda, ldb and ldc are the
// stored matrices' row strides. The BLAS torch itself calls (MKL in the x86 wheels, threaded
// by at::set_num_threads, a small product on the calling thread alone); beta 0 ignores what C
// held, NaN included.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// One product's operands, as gemm takes them.
template <typename T>
struct Product {
    bool trans_a, trans_b;
    int64_t m, n, k;
    T alpha;
    const T* a;
    int64_t lda;
    const T* b;
    int64_t ldb;
    T beta;
    T* c;
    int64_t ldc;
};

// Independent chains of products: the products of one chain run in order (a later one may add
// into an earlier one's output), chains in any order. Where there is work enough and the
// chains balance, each intra-op thread runs whole chains, every product on that thread alone;
// otherwise the products run one after another as gemm runs them. Why: a backward's two
// products of equal size (the input's and the weight's gradients) split as two whole products
// cost one product's time; split inside BLAS, each pays its own partition and wake-up, which on
// a small model's products came to no gain from the second thread at all.
void gemmChains(const std::vector<std::vector<Product<float>>>& chains);
void gemmChains(const std::vector<std::vector<Product<double>>>& chains);

}  // namespace trainbench::kernels
