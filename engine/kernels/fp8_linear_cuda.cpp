// The fp8 projection on CUDA: the operands quantised in tensor ops (which run on any device, so
// the tests compare them with quantiseFp8 on the CPU), the products through at::_scaled_mm_v2's
// SM90 block-scaled recipes (cuBLASLt's VEC128_32F and BLK128x128_32F scales).
#include "kernels/fp8_linear_cuda.h"

#include <ATen/ops/_scaled_mm_v2.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

namespace trainbench::kernels {
namespace {

using at::blas::ScalingType;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr float kSmallestNormal = std::numeric_limits<float>::min();  // 2^-126, fp8Scale's floor
constexpr int64_t kFloatMantissaBits = 23;
constexpr int64_t kFloatMantissaMask = (int64_t(1) << kFloatMantissaBits) - 1;

// The names fp8_linear.cpp gives the same matrices: one message for one failure on either path.
const char* const kInputName = "x, the input of an fp8 Linear";
const char* const kWeightName = "W, the weight of an fp8 Linear";
const char* const kGradientName = "dy, the output gradient of an fp8 Linear";

int64_t roundUp(int64_t v, int64_t multiple) { return (v + multiple - 1) / multiple * multiple; }

// Zero rows and columns at the end up to [rows, cols] (the matrix itself when it has them).
torch::Tensor padTo(const torch::Tensor& m, int64_t rows, int64_t cols) {
    if (m.size(0) == rows && m.size(1) == cols) return m;
    return at::constant_pad_nd(m, {0, cols - m.size(1), 0, rows - m.size(0)}, 0);
}


// The first non-finite element of `matrix` in row-major order, refused with quantiseFp8's message
// (refuseNonFiniteFp8). Only reached after a failed check: its cost is irrelevant.
[[noreturn]] void refuseFirstNonFinite(const torch::Tensor& matrix, const std::string& what) {
    const auto rows = matrix.to(torch::kFloat32).reshape({-1, matrix.size(-1)});
    const int64_t index = at::isfinite(rows).logical_not().reshape({-1}).to(torch::kInt32).argmax().item<int64_t>();
    const int64_t row = index / rows.size(1), col = index % rows.size(1);
    refuseNonFiniteFp8(rows[row][col].item<float>(), row, col, what);
}

// The checks of one pass: one device-to-host sync for all of them (the price of refusing a NaN
// before it is multiplied, as the CPU node does), the failing matrix located only on failure.
void requireFinite(const std::vector<Fp8FiniteCheck>& checks) {
    if (checks.empty()) return;
    std::vector<torch::Tensor> flags;
    for (const auto& check : checks) flags.push_back(check.finite.reshape({1}));
    if (at::cat(flags).all().item<bool>()) return;
    for (const auto& check : checks)
        if (!check.finite.item<bool>()) refuseFirstNonFinite(check.matrix, check.what);
    TORCH_INTERNAL_ASSERT(false, "fp8 finiteness: a pass failed its check but no operand did");
}

// A contiguous matrix (fp32, bf16 or fp16) whose sides are whole groups, quantised; `finite` says
// whether every group was (NaN and infinities survive abs and amax, so a group's amax is finite
// iff the group is). bf16 and fp16 are read as they are, without an fp32 copy: their maxima and
// their quotients by an fp32 scale (ATen computes a mixed division in fp32) are the widened
// values' own.
Fp8Matrix quantiseWholeGroups(const torch::Tensor& m, Fp8Grouping grouping, Fp8ScaleRule rule, torch::Tensor* finite) {
    const int64_t extent_r = groupRows(grouping), extent_c = groupCols(grouping);
    const int64_t rows = m.size(0), cols = m.size(1);
    TORCH_INTERNAL_ASSERT(rows % extent_r == 0 && cols % extent_c == 0 && m.is_contiguous() &&
                          at::isFloatingType(m.scalar_type()));
    // Group (i, j) is the slice [i, :, j, :].
    const auto groups = m.view({rows / extent_r, extent_r, cols / extent_c, extent_c});
    const auto amax = groups.abs().amax({1, 3}).to(torch::kFloat32);
    if (finite) *finite = at::isfinite(amax).all();
    Fp8Matrix q;
    q.grouping = grouping;
    q.scales = fp8ScalesOf(amax, rule);
    // A true division by each group's scale (a tensor, never a host scalar: see fp8ScalesOf), then
    // the clamp ATen's cast lacks (470 would become NaN), then E4M3 round to nearest even.
    auto scaled = at::div(groups, q.scales.view({rows / extent_r, 1, cols / extent_c, 1}));
    scaled.clamp_(-kE4m3Max, kE4m3Max);
    q.values = scaled.to(at::kFloat8_e4m3fn).view({rows, cols});
    return q;
}

// `m` padded with zeros to whole groups and quantised. A zero changes no group's largest |value|,
// so the groups' scales are those of the unpadded matrix's partial edge groups and its elements
// quantise to the same values; padded elements are zeros.
Fp8Matrix quantisePadded(const torch::Tensor& m, int64_t rows, int64_t cols, Fp8Grouping grouping, Fp8ScaleRule rule,
                         torch::Tensor* finite) {
    // fp64 (a reference run's) rounds to fp32 first, as quantiseFp8's fp32-only input would.
    const bool as_is = m.scalar_type() == torch::kFloat32 || m.scalar_type() == torch::kBFloat16 ||
                       m.scalar_type() == torch::kFloat16;
    const auto source = as_is ? m.contiguous() : m.to(torch::kFloat32).contiguous();
    return quantiseWholeGroups(padTo(source, rows, cols), grouping, rule, finite);
}

// The dequantised [R, C] fp32 matrix of 1 x 128 tiles over whole tiles (dequantiseFp8's value x
// scale, rounded once to fp32).
torch::Tensor dequantiseRowTiles(const Fp8Matrix& q) {
    const int64_t rows = q.values.size(0), cols = q.values.size(1);
    return (q.values.to(torch::kFloat32).view({rows, cols / kFp8Group, kFp8Group}) * q.scales.unsqueeze(2))
        .view({rows, cols});
}

// Every side of every product is padded to a multiple of 128. The kernel needs K a multiple of
// 16 and mat_b's N a multiple of 16; beyond that, PyTorch's own tests of these recipes
// (test_scaled_matmul_cuda.py) use only sides that are whole 128 groups, and cuBLASLt documents
// partial blocks thinly. Zeros change no scale and add nothing to any sum, so the padding is
// exact; it costs a copy only of matrices whose sides are not whole groups.
int64_t padded(int64_t side) { return roundUp(side, kFp8Group); }

}  // namespace

torch::Tensor fp8ScalesOf(const torch::Tensor& amax, Fp8ScaleRule rule) {
    // amax / 448 divided by a tensor on amax's device: ATen's CUDA division by a host scalar
    // multiplies by the scalar's reciprocal, which rounds differently from fp8Scale's quotient.
    const auto e4m3_max = at::scalar_tensor(kE4m3Max, amax.options());
    const auto ratio = at::div(amax, e4m3_max);
    const auto floor = at::scalar_tensor(kSmallestNormal, amax.options());
    if (rule == Fp8ScaleRule::kAmax) return at::maximum(ratio, floor);
    // The smallest power of two >= ratio from ratio's bits (a positive normal float): ratio
    // itself when its mantissa field is zero, else one exponent up. fp8Scale's frexp rule, with
    // no pow/ldexp whose device rounding could differ.
    const auto bits = ratio.view(torch::kInt32);
    const auto exponent = at::bitwise_right_shift(bits, kFloatMantissaBits);
    const auto inexact = at::bitwise_and(bits, kFloatMantissaMask).ne(0).to(torch::kInt32);
    const auto ceiling = at::bitwise_left_shift(exponent + inexact, kFloatMantissaBits).view(torch::kFloat32);
    const auto scale = at::where(ratio > kSmallestNormal, ceiling, floor);
    // fp8Scale's correction where ratio's rounding to fp32 fell onto a power of two from above.
    return at::where(at::div(amax, scale) > kE4m3Max, scale * 2, scale);
}

Fp8Matrix quantiseFp8Tensors(const torch::Tensor& matrix, Fp8Grouping grouping, Fp8ScaleRule rule,
                             const std::string& what) {
    TORCH_CHECK(matrix.dim() == 2 && at::isFloatingType(matrix.scalar_type()),
                "quantiseFp8Tensors takes a 2-D floating matrix, got ", matrix.sizes(), " ", matrix.scalar_type());
    const int64_t rows = matrix.size(0), cols = matrix.size(1);
    torch::Tensor finite;
    Fp8Matrix q = quantisePadded(matrix, roundUp(rows, groupRows(grouping)), roundUp(cols, groupCols(grouping)),
                                 grouping, rule, &finite);
    requireFinite({{finite, matrix, what.c_str()}});
    if (q.values.size(0) != rows || q.values.size(1) != cols)
        q.values = q.values.narrow(0, 0, rows).narrow(1, 0, cols).contiguous();
    return q;
}

torch::Tensor scaledMmTileScales(const torch::Tensor& scales) { return scales.t().contiguous().t(); }

torch::Tensor scaledMmBlockScales(const torch::Tensor& scales) {
    const int64_t n_blocks = scales.size(0), k_blocks = scales.size(1);
    auto padded_scales = at::zeros({n_blocks, roundUp(k_blocks, 4)}, scales.options().dtype(torch::kFloat32));
    padded_scales.narrow(1, 0, k_blocks).copy_(scales);
    return padded_scales.t();
}

Fp8ScaledMm fp8ForwardProduct(const torch::Tensor& rows, const torch::Tensor& weight, Fp8Matrix* kept_x) {
    const int64_t n = rows.size(0), in = rows.size(1), out = weight.size(0);
    Fp8ScaledMm p;
    torch::Tensor x_finite, w_finite;
    // Powers of two: these tiles are re-cut along the tokens for wgrad (fp8_linear.h).
    Fp8Matrix xq =
        quantisePadded(rows, padded(n), padded(in), Fp8Grouping::kRowTiles, Fp8ScaleRule::kPowerOfTwo, &x_finite);
    const Fp8Matrix wq =
        quantisePadded(weight, padded(out), padded(in), Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, &w_finite);
    p.checks = {{x_finite, rows, kInputName}, {w_finite, weight, kWeightName}};
    // y [N, out] = x [N, in] W^T: mat_b = W^T [in, out], column-major as W's rows are; its
    // 128 x 128 blocks are W's, given by W's own block scales.
    p.a = xq.values;
    p.a_scales = scaledMmTileScales(xq.scales);
    p.a_recipe = ScalingType::BlockWise1x128;
    p.b = wq.values.t();
    p.b_scales = scaledMmBlockScales(wq.scales);
    p.b_recipe = ScalingType::BlockWise128x128;
    p.rows = n;
    p.cols = out;
    if (kept_x) *kept_x = std::move(xq);
    return p;
}

Fp8ScaledMm fp8DgradProduct(const torch::Tensor& dy, const torch::Tensor& weight) {
    const int64_t n = dy.size(0), out = dy.size(1), in = weight.size(1);
    Fp8ScaledMm p;
    torch::Tensor g_finite, w_finite;
    // dy's tiles along `out`, the reduction; amax scales (these tiles are never re-cut).
    const Fp8Matrix gq =
        quantisePadded(dy, padded(n), padded(out), Fp8Grouping::kRowTiles, Fp8ScaleRule::kAmax, &g_finite);
    const Fp8Matrix wq =
        quantisePadded(weight, padded(out), padded(in), Fp8Grouping::kBlocks, Fp8ScaleRule::kAmax, &w_finite);
    p.checks = {{g_finite, dy, kGradientName}, {w_finite, weight, kWeightName}};
    // dx [N, in] = dy [N, out] W [out, in]: mat_b = W as [K = out, N = in], column-major, so its
    // transpose W^T [in, out] is stored row-major (the fp8 bytes transposed once); W^T's blocks
    // are W's blocks transposed, and so are their scales.
    p.a = gq.values;
    p.a_scales = scaledMmTileScales(gq.scales);
    p.a_recipe = ScalingType::BlockWise1x128;
    p.b = wq.values.t().contiguous().t();
    p.b_scales = scaledMmBlockScales(wq.scales.t());
    p.b_recipe = ScalingType::BlockWise128x128;
    p.rows = n;
    p.cols = in;
    return p;
}

Fp8ScaledMm fp8WgradProduct(const torch::Tensor& dy, const Fp8Matrix& kept_x, int64_t in) {
    const int64_t n = dy.size(0), out = dy.size(1);
    const int64_t n_padded = kept_x.values.size(0), in_padded = kept_x.values.size(1);
    TORCH_INTERNAL_ASSERT(n_padded == padded(n) && in_padded == padded(in));
    Fp8ScaledMm p;
    torch::Tensor g_finite;
    // dW [out, in] = dy^T [out, N] x [N, in]: the reduction runs over the tokens, so both operands
    // are cut into 128 x 1 tiles along them, with power-of-two scales; x from its kept fp8 tiles
    // (dequantised exactly: E4M3 values times powers of two), finite by construction.
    const Fp8Matrix gq =
        quantisePadded(dy, n_padded, padded(out), Fp8Grouping::kColumnTiles, Fp8ScaleRule::kPowerOfTwo, &g_finite);
    const Fp8Matrix xq = quantiseWholeGroups(dequantiseRowTiles(kept_x), Fp8Grouping::kColumnTiles,
                                             Fp8ScaleRule::kPowerOfTwo, nullptr);
    p.checks = {{g_finite, dy, kGradientName}};
    // mat_a = dy^T [out, N] row-major: dy's tile values transposed; a 128 x 1 tile of dy is a
    // 1 x 128 tile of dy^T, its scale at [token tile, column] of dy's scales, i.e. dy^T's tile
    // scales [out, N/128] are dy's scales transposed. mat_b = x [N, in] column-major (x^T
    // row-major), whose 1 x 128 tiles along K are x's token tiles: scales [in, N/128] likewise.
    p.a = gq.values.t().contiguous();
    p.a_scales = scaledMmTileScales(gq.scales.t());
    p.a_recipe = ScalingType::BlockWise1x128;
    p.b = xq.values.t().contiguous().t();
    p.b_scales = scaledMmTileScales(xq.scales.t());
    p.b_recipe = ScalingType::BlockWise1x128;
    p.rows = out;
    p.cols = in;
    return p;
}

namespace {

// at::_scaled_mm_v2 on the prepared operands, the padding cut off. No bias; use_fast_accum off:
// cuBLASLt then promotes the tensor cores' partial sums to fp32 along K, DeepSeek's point.
torch::Tensor runScaledMm(const Fp8ScaledMm& p, c10::ScalarType out_dtype) {
    const int64_t no_swizzle = static_cast<int64_t>(at::blas::SwizzleType::NO_SWIZZLE);
    const std::vector<torch::Tensor> scale_a{p.a_scales}, scale_b{p.b_scales};
    const std::vector<int64_t> recipe_a{static_cast<int64_t>(p.a_recipe)},
        recipe_b{static_cast<int64_t>(p.b_recipe)}, swizzle{no_swizzle};
    auto result = at::_scaled_mm_v2(p.a, p.b, scale_a, recipe_a, swizzle, scale_b, recipe_b, swizzle, std::nullopt,
                                    out_dtype, at::IntArrayRef{}, /*use_fast_accum=*/false);
    if (result.size(0) == p.rows && result.size(1) == p.cols) return result;
    return result.narrow(0, 0, p.rows).narrow(1, 0, p.cols).contiguous();
}

class Fp8LinearCudaNode : public torch::autograd::Function<Fp8LinearCudaNode> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight) {
        // The node sets every dtype itself: autocast must not recast its quantisation's ops.
        const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
        const int64_t out = weight.size(0), in = weight.size(1);
        const auto rows = x.reshape({-1, in});  // [N, in]
        auto sizes = x.sizes().vec();
        sizes.back() = out;
        ctx->saved_data["x_sizes"] = x.sizes().vec();
        ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
        if (rows.size(0) == 0) {  // no tokens: no product to run (the kernel's scales would be empty)
            ctx->save_for_backward({torch::Tensor(), torch::Tensor(), weight});
            return at::zeros(sizes, x.options());
        }
        Fp8Matrix xq;
        const Fp8ScaledMm p = fp8ForwardProduct(rows, weight, &xq);
        requireFinite(p.checks);
        auto y = runScaledMm(p, x.scalar_type()).view(sizes);
        // Kept for the backward: the fp8 x tiles and their scales (padded with zero rows and
        // columns where x's sides are not multiples of 128), nothing when W needs no gradient; W
        // is re-quantised from the master rather than kept as an fp8 copy.
        if (weight.requires_grad())
            ctx->save_for_backward({xq.values, xq.scales, weight});
        else
            ctx->save_for_backward({torch::Tensor(), torch::Tensor(), weight});
        return y;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
        const auto saved = ctx->get_saved_variables();
        const auto& weight = saved[2];
        const int64_t out = weight.size(0), in = weight.size(1);
        const auto x_sizes = ctx->saved_data["x_sizes"].toIntVector();
        const auto x_dtype = static_cast<c10::ScalarType>(ctx->saved_data["x_dtype"].toInt());
        const auto g = grads[0].reshape({-1, out});  // [N, out]
        const bool want_x = ctx->needs_input_grad(0), want_w = ctx->needs_input_grad(1);
        torch::Tensor grad_x, grad_w;
        if (g.size(0) == 0) {
            if (want_x) grad_x = at::zeros(x_sizes, grads[0].options().dtype(x_dtype));
            if (want_w) grad_w = at::zeros(weight.sizes(), weight.options().dtype(torch::kFloat32));
            return {grad_x, grad_w};
        }
        // Both products' operands first, so that one sync checks dy and W for both.
        std::optional<Fp8ScaledMm> dgrad, wgrad;
        std::vector<Fp8FiniteCheck> checks;
        if (want_x) {
            dgrad = fp8DgradProduct(g, weight);
            checks.insert(checks.end(), dgrad->checks.begin(), dgrad->checks.end());
        }
        if (want_w) {
            wgrad = fp8WgradProduct(g, {saved[0], saved[1], Fp8Grouping::kRowTiles}, in);
            checks.insert(checks.end(), wgrad->checks.begin(), wgrad->checks.end());
        }
        requireFinite(checks);
        if (dgrad) grad_x = runScaledMm(*dgrad, x_dtype).view(x_sizes);
        // fp32 out: W's gradient is fp32 and autograd adds it into W.grad (the kernel cannot
        // accumulate into an existing C).
        if (wgrad) grad_w = runScaledMm(*wgrad, torch::kFloat32);
        return {grad_x, grad_w};
    }
};

}  // namespace

torch::Tensor fp8LinearCuda(const torch::Tensor& x, const torch::Tensor& weight) {
    TORCH_CHECK(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1) && weight.size(1) > 0,
                "fp8LinearCuda: x [..., in] and W [out, in] with in > 0, got ", x.sizes(), " and ", weight.sizes());
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && x.device() == weight.device(),
                "fp8LinearCuda takes x and W on one CUDA device, got ", x.device(), " and ", weight.device());
    TORCH_CHECK((weight.scalar_type() == torch::kFloat32 || weight.scalar_type() == torch::kBFloat16) &&
                    (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16 ||
                     x.scalar_type() == torch::kFloat16),
                "fp8LinearCuda takes an fp32 or bf16 W and an fp32, bf16 or fp16 x, got W ", weight.scalar_type(),
                " and x ", x.scalar_type());
    return Fp8LinearCudaNode::apply(x, weight);
}

std::string fp8CudaUnsupportedReason(int device_index) {
    const std::string device = "cuda:" + std::to_string(device_index);
    const std::string need = "runtime.dtype fp8 on " + device +
                             " needs a GPU of compute capability 9.x (H100, H200): its products are cuBLASLt's "
                             "block-scaled fp8 matmuls (1 x 128 and 128 x 128 scales), which run on SM90 only";
    if (!torch::cuda::is_available())
        return need + ", and CUDA is not available on this machine; use runtime.dtype bf16, or runtime.device cpu "
                      "(where fp8 is emulated)";
    int count = 0;
    try {
        count = static_cast<int>(c10::cuda::device_count());
    } catch (...) {
        count = 0;
    }
    if (device_index < 0 || device_index >= count)
        return need + "; there is no " + device + " (" + std::to_string(count) + " CUDA devices)";
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, device_index) != cudaSuccess)
        return need + "; the properties of " + device + " could not be read";
    // The wheel's CUDA 13 ships cuBLASLt 13, past the 12.9 these scale modes first came in.
    if (props.major == 9) return "";
    return need + "; " + device + " is " + props.name + ", compute capability " + std::to_string(props.major) + "." +
           std::to_string(props.minor) + "; use runtime.dtype bf16";
}

}  // namespace trainbench::kernels
