// Row-major products through the Fortran BLAS interface (column-major): C^T = op(B)^T op(A)^T,
// so the operands swap places and keep their flags.
#include "kernels/blas.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

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

template <typename T, typename Blas>
void rowMajor(Blas blas, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
              int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
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
    const bool alone = double(m) * double(n) * double(k) < kAloneBelow;
    const int one = 1;
    int previous = alone ? mkl_set_num_threads_local_(&one) : 0;
#endif
    blas(&tb, &ta, &M, &N, &K, &alpha, b, &LDB, a, &LDA, &beta, c, &LDC);
#if defined(__x86_64__)
    if (alone) mkl_set_num_threads_local_(&previous);
#endif
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    rowMajor(sgemm_, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    rowMajor(dgemm_, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace trainbench::kernels
