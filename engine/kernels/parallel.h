// The kernels' parallel loops, on ATen's intra-op threads (runtime.threads).
//
// at::parallel_for is a header template that splits work only where the including file is
// compiled with OpenMP (-fopenmp defines _OPENMP, and ATen's header then INTRA_OP_PARALLEL);
// torch's CMake package passes no such flag, so in the engine's own files it ran every loop on
// the calling thread. This is the one file compiled with OpenMP (against torch's own libgomp),
// and the kernels call it.
#pragma once

#include <cstdint>

#include <c10/util/FunctionRef.h>

namespace trainbench::kernels {

// Splits [begin, end) into at most one chunk per intra-op thread, chunks of at least `grain`
// items (a range of `grain` items or fewer runs on the calling thread), and calls `body` on
// each chunk; inside a parallel region it runs the whole range inline. An exception from
// any chunk reaches the caller. Each chunk runs under the caller's product precision
// (product_precision.h).
void parallelFor(int64_t begin, int64_t end, int64_t grain, c10::function_ref<void(int64_t, int64_t)> body);

// Whether parallelFor really splits (the engine was built with OpenMP): for the tests.
bool parallelForSplits();

}  // namespace trainbench::kernels
