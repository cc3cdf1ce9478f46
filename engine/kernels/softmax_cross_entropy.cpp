// The head's rows: softmax, loss and gradient per row, vectorised like the attention's rows.
#include "kernels/softmax_cross_entropy.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu_kernels.h"
#include "kernels/parallel.h"
#include "kernels/softmax_row.h"

namespace trainbench::kernels {
namespace {

template <typename T>
inline void crossEntropyRowsImpl(T* rows, int64_t n, int64_t vocab, const int64_t* targets, int64_t ignore_index,
                                 T* losses) {
    for (int64_t i = 0; i < n; ++i) {
        T* row = rows + i * vocab;
        const int64_t target = targets[i];
        if (target == ignore_index) {
            for (int64_t j = 0; j < vocab; ++j) row[j] = 0;
            losses[i] = 0;
            continue;
        }
        if (target < 0 || target >= vocab)
            throw std::out_of_range("target " + std::to_string(target) + " outside the vocabulary [0, " +
                                    std::to_string(vocab) + ")");
        const T picked = row[target];
        const T lse = softmaxRowImpl(row, vocab, vocab);
        row[target] -= T(1);
        losses[i] = lse - picked;
    }
}

TRAINBENCH_VECTOR_VARIANTS(crossEntropyRows, crossEntropyRowsImpl,
                           (float* rows, int64_t n, int64_t vocab, const int64_t* targets, int64_t ignore_index,
                            float* losses),
                           (rows, n, vocab, targets, ignore_index, losses))
void crossEntropyRows(double* rows, int64_t n, int64_t vocab, const int64_t* targets, int64_t ignore_index,
                      double* losses) {
    crossEntropyRowsImpl(rows, n, vocab, targets, ignore_index, losses);
}

}  // namespace

torch::Tensor softmaxCrossEntropyInPlace(torch::Tensor& logits, const torch::Tensor& targets, int64_t ignore_index) {
    TORCH_CHECK(logits.dim() == 2 && logits.is_contiguous() && logits.device().is_cpu(),
                "softmaxCrossEntropyInPlace: logits must be contiguous [n, V] on the CPU");
    TORCH_CHECK(targets.scalar_type() == torch::kInt64 && targets.numel() == logits.size(0),
                "softmaxCrossEntropyInPlace: one int64 target per row");
    const int64_t n = logits.size(0), vocab = logits.size(1);
    const torch::Tensor ids = targets.contiguous();
    torch::Tensor losses = torch::empty({n}, logits.options());
    AT_DISPATCH_FLOATING_TYPES(logits.scalar_type(), "trainbench_softmax_cross_entropy", [&] {
        scalar_t* rows = logits.data_ptr<scalar_t>();
        scalar_t* out = losses.data_ptr<scalar_t>();
        const int64_t* t = ids.data_ptr<int64_t>();
        parallelFor(0, n, itemsPerTask(vocab), [&](int64_t begin, int64_t end) {
            crossEntropyRows(rows + begin * vocab, end - begin, vocab, t + begin, ignore_index, out + begin);
        });
    });
    return losses;
}

}  // namespace trainbench::kernels
