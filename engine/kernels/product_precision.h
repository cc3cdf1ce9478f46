// The precision the kernels' matrix products run in: their operands' own, bf16 operands with
// fp32 accumulation (runtime.dtype bf16 on the CPU), or fp8 (runtime.dtype fp8): the projections
// and gated MLPs take DeepSeek-V3's block-scaled E4M3 recipe (fp8_linear.h, fp8_gated_mlp.h) and
// every other product runs at its operands' precision (fp32 on the CPU: the attention core).
//
// Under bf16 the kernels keep their fp32 tensors and element-wise loops; only the products round
// their operands to bf16, as autocast's products would, and accumulate in fp32 (Bf16Route
// below says where the result is rounded too). The setting is per thread: a rank thread's
// forward sets it, each node saves it for its backward (which may run on another thread), and
// parallelFor carries it into its workers.
#pragma once

#include <optional>

namespace trainbench::kernels {

enum class ProductPrecision { kOperands, kBf16, kFp8 };

ProductPrecision productPrecision();

// Sets this thread's precision until the scope ends, then restores the previous one.
class ProductPrecisionScope {
public:
    explicit ProductPrecisionScope(ProductPrecision precision);
    ~ProductPrecisionScope();
    ProductPrecisionScope(const ProductPrecisionScope&) = delete;
    ProductPrecisionScope& operator=(const ProductPrecisionScope&) = delete;

private:
    ProductPrecision previous_;
};

// How a bf16 product is computed. kRoundedFp32: the operands rounded to bf16 values held in
// fp32, then the fp32 GEMM: the products of two bf16 values are exact in fp32, so this is a bf16
// product with fp32 accumulation and an fp32 result. kOneDnn: oneDNN's bf16 product
// (onednn_product.h), whose result is rounded to bf16 as autocast's products' are, then widened
// into the fp32 output. By default products of kOneDnnFrom multiply-adds and more take oneDNN
// where the CPU multiplies bf16 in hardware, the rest the fp32 GEMM; a test forces either
// (oneDNN only where it runs), nullopt restores the rule.
enum class Bf16Route { kOneDnn, kRoundedFp32 };
constexpr double kOneDnnFrom = double(1 << 23);
Bf16Route bf16Route(double multiply_adds);
void setBf16Route(std::optional<Bf16Route> route);

}  // namespace trainbench::kernels
