#include "kernels/product_precision.h"

#include <atomic>

#include "kernels/onednn_product.h"

namespace trainbench::kernels {
namespace {

thread_local ProductPrecision current = ProductPrecision::kOperands;

// -1: the rule; otherwise the Bf16Route a test forces.
std::atomic<int> forced_route{-1};

}  // namespace

ProductPrecision productPrecision() { return current; }

ProductPrecisionScope::ProductPrecisionScope(ProductPrecision precision) : previous_(current) { current = precision; }
ProductPrecisionScope::~ProductPrecisionScope() { current = previous_; }

Bf16Route bf16Route(double multiply_adds) {
    const int forced = forced_route.load(std::memory_order_relaxed);
    if (forced >= 0) return static_cast<Bf16Route>(forced);
    return multiply_adds >= kOneDnnFrom && oneDnnBf16Fast() ? Bf16Route::kOneDnn : Bf16Route::kRoundedFp32;
}

void setBf16Route(std::optional<Bf16Route> route) {
    if (route == Bf16Route::kOneDnn && !oneDnnBf16Runs()) route = Bf16Route::kRoundedFp32;
    forced_route.store(route ? static_cast<int>(*route) : -1, std::memory_order_relaxed);
}

}  // namespace trainbench::kernels
