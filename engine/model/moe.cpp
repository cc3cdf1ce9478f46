// MoE forward: tokens sorted by expert, the experts' grouped products, weighted scatter back;
// under expert parallelism the sorted tokens travel to the experts' ranks and back.
#include "model/moe.h"

#include "kernels/expert_dispatch.h"
#include "model/all_to_all.h"
#include "model/grouped_experts.h"
#include "memory/host_to_device.h"

namespace trainbench {

MoEImpl::MoEImpl(const ModelConfig& c)
    : n_experts_(c.n_routed_experts), topk_(c.n_activated_experts), aux_alpha_(c.seq_aux_loss_alpha) {
    gate = register_module("gate", Gate(c));
    experts_ = register_module("experts", std::make_shared<torch::nn::Module>());
    for (int64_t e = 0; e < n_experts_; ++e)
        expert_.push_back(experts_->register_module(std::to_string(e), MLP(c.dim, c.moe_inter_dim)));
    ep_.experts_per_rank = n_experts_;
    if (c.n_shared_experts > 0)
        shared_experts = register_module("shared_experts", MLP(c.dim, c.n_shared_experts * c.moe_inter_dim));
}

MoEOutput MoEImpl::forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2), N = B * T;
    auto flat_x = x.reshape({N, d});
    // The balance loss needs the sequences: the router computes it, with the choice, in one pass.
    const bool with_aux = aux_alpha_ > 0 && is_training();
    Routing route = gate(flat_x, with_aux ? B : 0, aux_alpha_);

    if (kernels::expertDispatchTakes(flat_x, route.weights, route.indices)) {
        // One counting sort, one gather and one weighted add, each its own backward, where the
        // form below records a dozen operators and their nodes.
        const auto order = kernels::sortByExpert(route.indices, n_experts_);
        if (is_training() && count_loads_) load_ = load_.defined() ? load_ + order.counts : order.counts;
        const int64_t* count = order.counts.data_ptr<int64_t>();
        auto dispatched = kernels::dispatchRows(flat_x, order);
        auto expert_out = ep_.size > 1 ? runExpertsParallel(dispatched, order.counts, count)
                                       : runExperts(dispatched, count);
        auto base = shared_experts ? shared_experts(flat_x) : torch::zeros_like(flat_x);
        MoEOutput out{kernels::combineRows(base, expert_out, route.weights, order).view({B, T, d}), {}};
        if (with_aux) out.seq_aux = route.seq_aux;
        return out;
    }
    auto flat_experts = route.indices.reshape({-1});                        // [N*k]
    auto counts = torch::bincount(flat_experts, /*weights=*/{}, n_experts_);  // [E]
    // Only training traffic counts toward balancing; evaluation must not move the biases.
    if (is_training() && count_loads_) load_ = load_.defined() ? load_ + counts : counts;

    // Group the (token, slot) pairs by expert: a stable sort keeps token order inside an expert.
    auto order = std::get<1>(flat_experts.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
    auto token_of = order.div(topk_, "floor");                               // [N*k]
    auto dispatched = flat_x.index_select(0, token_of);                     // [N*k, d]
    // Splitting by expert needs the counts on the host: one small copy per MoE layer. One split
    // rather than a slice per expert: the backward joins the experts' gradients in one copy,
    // where each slice's would fill a zero tensor the size of all of them and add it.
    auto host_counts = counts.to(torch::kCPU);
    const int64_t* count = host_counts.data_ptr<int64_t>();
    auto expert_out = ep_.size > 1 ? runExpertsParallel(dispatched, counts, count)
                                   : runExperts(dispatched, count);         // [N*k, d]
    auto slot_weight = route.weights.reshape({-1}).index_select(0, order).unsqueeze(1).to(x.scalar_type());
    // The routed outputs are added onto the shared experts' output: no zero tensor to fill and
    // no separate sum. Under bf16 autocast the routed outputs come out fp32 (the routing weights
    // are) and the shared experts' bf16; index_add needs one dtype, the wider.
    auto routed = expert_out * slot_weight;
    auto base = shared_experts ? shared_experts(flat_x).to(routed.scalar_type()) : torch::zeros_like(routed);
    auto y = base.index_add(0, token_of, routed);

    MoEOutput out{y.view({B, T, d}), {}};
    if (with_aux) out.seq_aux = route.seq_aux;
    return out;
}

torch::Tensor MoEImpl::runExperts(const torch::Tensor& dispatched, const int64_t* count) {
    // Every expert gets a gradient (zeros where no row came): none is idle for the buckets.
    if (is_training() && count_loads_) idle_experts_.clear();
    return groupedExperts(dispatched, expert_, std::vector<int64_t>(count, count + n_experts_));
}

torch::Tensor MoEImpl::runExpertsParallel(const torch::Tensor& dispatched, const torch::Tensor& counts,
                                          const int64_t* count) {
    const int EP = ep_.size;
    const int64_t L = ep_.experts_per_rank;
    // First the counts: rank d learns how many rows each rank sends to each of its experts.
    std::vector<int64_t> per_rank(EP, L), send(EP, 0);
    for (int d = 0; d < EP; ++d)
        for (int64_t j = 0; j < L; ++j) send[d] += count[d * L + j];
    // On the layer's device (NCCL exchanges device memory), then one more small copy to the host.
    auto counts_in = torch::empty({EP * L, 1}, counts.options());
    {
        torch::NoGradGuard no_grad;
        ep_.group->allToAll(counts.view({n_experts_, 1}).contiguous(), counts_in, per_rank, per_rank);
    }
    const auto host_in = counts_in.to(torch::kCPU);
    const int64_t* in = host_in.data_ptr<int64_t>();  // [s][j]: rows from rank s for local expert j
    std::vector<int64_t> recv(EP, 0), rows_of(L, 0);  // per source rank, per local expert
    int64_t total = 0;
    for (int s = 0; s < EP; ++s)
        for (int64_t j = 0; j < L; ++j) {
            recv[s] += in[s * L + j];
            rows_of[j] += in[s * L + j];
            total += in[s * L + j];
        }
    // The rows arrive by source rank, each source's sorted by expert: regroup them by expert.
    auto received = allToAll(dispatched, send, recv, *ep_.group);
    torch::Tensor outputs_back = received;  // no rows came: still the path the backward's exchange takes
    if (is_training() && count_loads_) {
        idle_experts_.clear();
        received_ += total;
    }
    if (total > 0) {
        // Each row's local expert, in arrival order, stably sorted: by expert, sources in rank order.
        auto expert_of_row = torch::arange(L, counts_in.options()).repeat({EP}).repeat_interleave(counts_in.view({-1}));
        auto order = std::get<1>(expert_of_row.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
        const std::vector<MLP> local(expert_.begin() + ep_.firstExpert(), expert_.begin() + ep_.firstExpert() + L);
        auto out = groupedExperts(received.index_select(0, order), local, rows_of);
        // Back into the order the rows came in, then home.
        outputs_back = torch::empty_like(out).index_copy(0, order, out);
    }
    return allToAll(outputs_back, recv, send, *ep_.group);
}

void MoEImpl::distribute(const ExpertParallel& ep) {
    ep_ = ep;
    for (int64_t e = 0; e < n_experts_; ++e)
        if (!ep_.holds(e) && expert_[e]) {
            experts_->unregister_module(std::to_string(e));
            expert_[e] = MLP(nullptr);
        }
}

std::vector<torch::Tensor> MoEImpl::routedExpertParameters() const { return experts_->parameters(); }

std::vector<torch::Tensor> MoEImpl::takeIdleExpertParameters() {
    std::vector<torch::Tensor> params;
    for (int64_t e : idle_experts_)
        for (const auto& p : expert_[e]->parameters()) params.push_back(p);
    idle_experts_.clear();
    return params;
}

torch::Tensor MoEImpl::takeLoad() {
    auto load = load_.defined() ? load_ : torch::zeros({n_experts_}, torch::kInt64);
    load_ = torch::Tensor();
    return load;
}

void MoEImpl::updateBias(const torch::Tensor& global_load, double gamma) {
    if (!gate->bias.defined() || gamma == 0) return;
    torch::NoGradGuard no_grad;
    auto load = copyToDevice(global_load, gate->bias.device(), torch::kFloat32);
    gate->bias.add_(torch::sign(load.mean() - load) * gamma);
}

}  // namespace trainbench
