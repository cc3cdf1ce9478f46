#include "kernels/sum_of_squares.h"

#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"
#include "kernels/vector_math.h"

namespace trainbench::kernels {
namespace {

constexpr int64_t kBlock = 1 << 16;  // elements per partial sum
constexpr int64_t kLanes = 8;

template <typename T>
inline double blockSumImpl(const T* x, int64_t n) {
    double lanes[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += double(x[j + l]) * double(x[j + l]);
    double sum = 0;
    for (int64_t l = 0; l < kLanes; ++l) sum += lanes[l];
    for (; j < n; ++j) sum += double(x[j]) * double(x[j]);
    return sum;
}

double blockSumFloatImpl(const float* x, int64_t n, double* out) { return *out = blockSumImpl(x, n); }
TRAINBENCH_VECTOR_VARIANTS(blockSum, blockSumFloatImpl, (const float* x, int64_t n, double* out), (x, n, out))
void blockSum(const double* x, int64_t n, double* out) { *out = blockSumImpl(x, n); }

template <typename T>
double sumOf(const T* x, int64_t n) {
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    if (blocks <= 1) {
        double out = 0;
        if (n > 0) blockSum(x, n, &out);
        return out;
    }
    std::vector<double> partial(blocks, 0.0);
    parallelFor(0, blocks, 1, [&](int64_t first, int64_t last) {
        for (int64_t b = first; b < last; ++b)
            blockSum(x + b * kBlock, std::min(kBlock, n - b * kBlock), &partial[b]);
    });
    double sum = 0;
    for (double p : partial) sum += p;
    return sum;
}

}  // namespace

bool sumOfSquaresTakes(const torch::Tensor& x) {
    return x.defined() && x.is_contiguous() && cpuKernelsTake({&x});
}

double sumOfSquares(const torch::Tensor& x) {
    if (x.scalar_type() == torch::kFloat64) return sumOf(x.data_ptr<double>(), x.numel());
    return sumOf(x.data_ptr<float>(), x.numel());
}

}  // namespace trainbench::kernels
