// The all-to-all of expert parallelism as an autograd function.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "comm/collectives.h"

namespace trainbench {

// Rows [o_d, o_d + send[d]) of `x` go to rank d of `group`; the result holds recv[s] rows from
// each rank s, in rank order. Its backward is the reverse exchange (recv and send swapped) of
// the output's gradient: the gradient of each row goes back to the rank it came from. Every
// rank of the group calls it in the same order, forward and backward.
torch::Tensor allToAll(const torch::Tensor& x, const std::vector<int64_t>& send, const std::vector<int64_t>& recv,
                       Collectives& group);

}  // namespace trainbench
