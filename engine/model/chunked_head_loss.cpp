// The chunked head: forward and the gradients in one pass per chunk, the backward a scaling.
#include "model/chunked_head_loss.h"

#include <optional>

#include "kernels/blas.h"
#include "kernels/cpu_kernels.h"
#include "kernels/linear.h"
#include "kernels/product_precision.h"
#include "kernels/softmax_cross_entropy.h"

namespace trainbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One chunk's rows: x [n, d], its targets [n], and where its gradient rows go.
struct Chunk {
    torch::Tensor x, targets, grad_x;
};

// The chunk's logits [n, V] in the compute dtype: on the CPU one product into a fresh tensor
// (the projection kernel's own product, at the scope's precision), elsewhere the projection.
torch::Tensor chunkLogits(const torch::Tensor& x, const torch::Tensor& weight, torch::ScalarType compute, bool cpu) {
    if (!cpu) return kernels::linear(x, weight).to(compute);
    const int64_t n = x.size(0), vocab = weight.size(0), d = weight.size(1);
    torch::Tensor logits = torch::empty({n, vocab}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "trainbench_head_logits", [&] {
        kernels::gemm(false, true, n, vocab, d, scalar_t(1), x.data_ptr<scalar_t>(), d, weight.data_ptr<scalar_t>(), d,
                      scalar_t(0), logits.data_ptr<scalar_t>(), vocab);
    });
    return logits;
}

// dL/dx rows = P W and dL/dW += P^T x for the chunk's dL/dlogits P [n, V].
void chunkGradients(const torch::Tensor& p, const Chunk& chunk, const torch::Tensor& weight, torch::Tensor& grad_weight,
                    bool cpu) {
    if (!cpu) {
        const torch::Tensor g = p.to(chunk.x.scalar_type());
        if (chunk.grad_x.defined()) chunk.grad_x.copy_(torch::mm(g, weight.to(chunk.x.scalar_type())));
        if (grad_weight.defined()) grad_weight.add_(torch::mm(g.t(), chunk.x));
        return;
    }
    const int64_t n = chunk.x.size(0), vocab = weight.size(0), d = weight.size(1);
    AT_DISPATCH_FLOATING_TYPES(p.scalar_type(), "trainbench_head_gradients", [&] {
        // Two independent products of the same size: one per thread where there are two.
        std::vector<std::vector<kernels::Product<scalar_t>>> chains;
        if (chunk.grad_x.defined())
            chains.push_back({{false, false, n, d, vocab, scalar_t(1), p.data_ptr<scalar_t>(), vocab,
                               weight.data_ptr<scalar_t>(), d, scalar_t(0), chunk.grad_x.data_ptr<scalar_t>(), d}});
        if (grad_weight.defined())
            chains.push_back({{true, false, vocab, d, n, scalar_t(1), p.data_ptr<scalar_t>(), vocab,
                               chunk.x.data_ptr<scalar_t>(), d, scalar_t(1), grad_weight.data_ptr<scalar_t>(), d}});
        kernels::gemmChains(chains);
    });
}

class ChunkedHeadLoss : public torch::autograd::Function<ChunkedHeadLoss> {
public:
    static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor weight, torch::Tensor targets,
                                 int64_t ignore_index, int64_t chunk_rows, bool gradients) {
        // The fp8 recipe keeps the head in higher precision: its products at their operands'.
        std::optional<kernels::ProductPrecisionScope> outside_fp8;
        if (kernels::productPrecision() == kernels::ProductPrecision::kFp8)
            outside_fp8.emplace(kernels::ProductPrecision::kOperands);
        const auto compute = x.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
        const bool cpu = kernels::cpuKernelsTake({&x, &weight});
        const torch::Tensor rows_x = cpu ? x.contiguous() : x;
        const torch::Tensor w = cpu ? weight.contiguous() : weight;
        const int64_t rows = x.size(0);
        const bool want_x = gradients && x.requires_grad(), want_weight = gradients && weight.requires_grad();
        torch::Tensor grad_x = want_x ? torch::empty(x.sizes(), x.options()) : torch::Tensor();
        // dL/dW summed over the chunks in the compute dtype (fp32, or fp64), whatever the weight's
        torch::Tensor grad_weight = want_weight ? torch::zeros(w.sizes(), w.options().dtype(compute)) : torch::Tensor();
        torch::Tensor sum = torch::zeros({}, x.options().dtype(compute));
        for (int64_t start = 0; start < rows; start += chunk_rows) {
            const int64_t n = std::min(chunk_rows, rows - start);
            Chunk chunk{rows_x.narrow(0, start, n), targets.narrow(0, start, n),
                        want_x ? grad_x.narrow(0, start, n) : torch::Tensor()};
            torch::Tensor logits = chunkLogits(chunk.x, w, compute, cpu);  // [n, V], the only one alive
            // In the logits' place, dL/dlogits of a summed cross-entropy: softmax minus the
            // target's one-hot, zero on rows that are not counted.
            if (cpu) {
                sum += kernels::softmaxCrossEntropyInPlace(logits, chunk.targets, ignore_index).sum();
            } else {
                const torch::Tensor ignored = chunk.targets.eq(ignore_index);
                const torch::Tensor safe = chunk.targets.masked_fill(ignored, 0).unsqueeze(1);
                const torch::Tensor lse = logits.logsumexp(1, /*keepdim=*/true);  // [n, 1]
                sum += (lse - logits.gather(1, safe)).squeeze(1).masked_fill(ignored, 0).sum();
                if (!want_x && !want_weight) continue;
                logits.sub_(lse).exp_();
                logits.scatter_add_(1, safe, torch::full({n, 1}, -1.0, logits.options()));
                logits.masked_fill_(ignored.unsqueeze(1), 0);
            }
            if (want_x || want_weight) chunkGradients(logits, chunk, w, grad_weight, cpu);
        }
        ctx->save_for_backward({grad_x, grad_weight});
        ctx->saved_data["weight_dtype"] = static_cast<int64_t>(weight.scalar_type());
        return sum;
    }

    // Runs once (the trainer never keeps this graph for a second backward): the gradients are
    // scaled in place. The trainer back-propagates raw token-loss sums, an incoming gradient of
    // exactly 1, which leaves their bits as they are, with no read of it on the host.
    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor& g = grad_outputs[0];
        torch::Tensor grad_x = saved[0], grad_weight = saved[1];
        if (grad_x.defined()) grad_x.mul_(g.to(grad_x.scalar_type()));
        if (grad_weight.defined()) {
            grad_weight.mul_(g.to(grad_weight.scalar_type()));
            grad_weight = grad_weight.to(static_cast<torch::ScalarType>(ctx->saved_data["weight_dtype"].toInt()));
        }
        return {grad_x, grad_weight, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor chunkedHeadLoss(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& targets,
                              int64_t ignore_index, int64_t chunk_rows) {
    TORCH_CHECK(chunk_rows > 0, "chunkedHeadLoss: chunk_rows must be positive");
    // (apply runs the forward with gradients off: whether a graph is being made is asked here)
    return ChunkedHeadLoss::apply(x, weight, targets, ignore_index, chunk_rows, torch::GradMode::is_enabled());
}

}  // namespace trainbench
