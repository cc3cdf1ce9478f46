// Compiled with -fopenmp (engine/CMakeLists.txt): the only file whose at::parallel_for splits.
#include "kernels/parallel.h"

#include <ATen/Parallel.h>

namespace trainbench::kernels {

void parallelFor(int64_t begin, int64_t end, int64_t grain, c10::function_ref<void(int64_t, int64_t)> body) {
    at::parallel_for(begin, end, grain, [&](int64_t first, int64_t last) { body(first, last); });
}

bool parallelForSplits() {
#ifdef INTRA_OP_PARALLEL
    return true;
#else
    return false;
#endif
}

}  // namespace trainbench::kernels
