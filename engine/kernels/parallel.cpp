// Compiled with -fopenmp (engine/CMakeLists.txt): the only file whose at::parallel_for splits.
#include "kernels/parallel.h"

#include <ATen/Parallel.h>

#include "kernels/product_precision.h"

namespace trainbench::kernels {

void parallelFor(int64_t begin, int64_t end, int64_t grain, c10::function_ref<void(int64_t, int64_t)> body) {
    // The workers are other threads: the caller's product precision goes with each chunk.
    const ProductPrecision precision = productPrecision();
    at::parallel_for(begin, end, grain, [&](int64_t first, int64_t last) {
        ProductPrecisionScope scope(precision);
        body(first, last);
    });
}

bool parallelForSplits() {
#ifdef INTRA_OP_PARALLEL
    return true;
#else
    return false;
#endif
}

}  // namespace trainbench::kernels
