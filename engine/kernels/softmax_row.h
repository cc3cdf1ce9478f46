// A softmax over one row in place, in the loops' vector form (vector_math.h): the attention's
// score rows and the output head's logit rows.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/vector_math.h"

namespace trainbench::kernels {

constexpr int64_t kSoftmaxLanes = 16;

// The row's first `valid` entries become their softmax, the rest (to `total`) 0; returns the
// log-sum-exp of the first `valid`. Maxima and sums in kSoftmaxLanes running lanes, added in a
// fixed order, so every vector width gives the same bits.
template <typename T>
inline T softmaxRowImpl(T* row, int64_t valid, int64_t total) {
    T lanes[kSoftmaxLanes];
    for (int64_t l = 0; l < kSoftmaxLanes; ++l) lanes[l] = -std::numeric_limits<T>::infinity();
    int64_t j = 0;
    for (; j + kSoftmaxLanes <= valid; j += kSoftmaxLanes)
        for (int64_t l = 0; l < kSoftmaxLanes; ++l) lanes[l] = row[j + l] > lanes[l] ? row[j + l] : lanes[l];
    T top = -std::numeric_limits<T>::infinity();
    for (int64_t l = 0; l < kSoftmaxLanes; ++l) top = lanes[l] > top ? lanes[l] : top;
    for (; j < valid; ++j) top = row[j] > top ? row[j] : top;
#pragma GCC ivdep
    for (j = 0; j < valid; ++j) row[j] = expApprox(row[j] - top);
    for (int64_t l = 0; l < kSoftmaxLanes; ++l) lanes[l] = 0;
    for (j = 0; j + kSoftmaxLanes <= valid; j += kSoftmaxLanes)
        for (int64_t l = 0; l < kSoftmaxLanes; ++l) lanes[l] += row[j + l];
    T sum = 0;
    for (int64_t l = 0; l < kSoftmaxLanes; ++l) sum += lanes[l];
    for (; j < valid; ++j) sum += row[j];
    const T inverse = T(1) / sum;
#pragma GCC ivdep
    for (j = 0; j < valid; ++j) row[j] *= inverse;
    for (j = valid; j < total; ++j) row[j] = 0;
    return top + std::log(sum);
}

}  // namespace trainbench::kernels
