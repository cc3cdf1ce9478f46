// All-to-all with a backward: the reverse exchange of the gradients.
#include "model/all_to_all.h"

#include <numeric>

namespace trainbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor exchange(const torch::Tensor& x, const std::vector<int64_t>& send, const std::vector<int64_t>& recv,
                       Collectives& group) {
    std::vector<int64_t> shape = x.sizes().vec();
    shape[0] = std::accumulate(recv.begin(), recv.end(), int64_t(0));
    auto out = torch::empty(shape, x.options());
    group.allToAll(x.contiguous(), out, send, recv);
    return out;
}

class AllToAll : public torch::autograd::Function<AllToAll> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, std::vector<int64_t> send,
                                 std::vector<int64_t> recv, Collectives* group) {
        ctx->saved_data["send"] = send;
        ctx->saved_data["recv"] = recv;
        ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
        return exchange(x, send, recv, *group);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto* group = reinterpret_cast<Collectives*>(ctx->saved_data["group"].toInt());
        const auto send = ctx->saved_data["send"].toIntVector(), recv = ctx->saved_data["recv"].toIntVector();
        // An output gradient autograd never formed arrives as zeros (materialised, the default):
        // the other ranks still expect their rows.
        return {exchange(grads[0], recv, send, *group), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor allToAll(const torch::Tensor& x, const std::vector<int64_t>& send, const std::vector<int64_t>& recv,
                       Collectives& group) {
    return AllToAll::apply(x, send, recv, &group);
}

}  // namespace trainbench
