// Fresh gradient norms: tensor hooks on the parameters, accumulating on the device.
#include "train/fresh_gradient_norms.h"

#include "kernels/sum_of_squares.h"
#include "memory/host_to_device.h"

namespace trainbench {

const std::vector<std::string>& noiseScaleGroups() {
    static const std::vector<std::string> groups{"attention", "dense_mlp", "experts", "embeddings"};
    return groups;
}

std::vector<int> noiseScaleGroupsOf(Transformer& model) {
    std::vector<int> out;
    const ModelConfig& config = model->config();
    for (const auto& item : model->named_parameters()) {
        const std::string& name = item.key();
        const bool attention = name.find(".attn.") != std::string::npos || name.find(".attn_norm.") != std::string::npos;
        const bool feed_forward = name.find(".ffn.") != std::string::npos || name.find(".ffn_norm.") != std::string::npos;
        if (name.rfind("mtp.", 0) == 0) {
            // A multi-token-prediction module: its block's parts as a block's (dense only when every
            // layer is), its joining projection and norms with the embedding and the head.
            out.push_back(attention ? 0 : !feed_forward ? 3 : config.n_dense_layers >= config.n_layers ? 1 : 2);
            continue;
        }
        if (name.rfind("layers.", 0) != 0) {
            out.push_back(3);  // the embedding, the head, the final norm
            continue;
        }
        const int64_t layer = std::stoll(name.substr(7, name.find('.', 7) - 7));
        out.push_back(attention ? 0 : layer < config.n_dense_layers ? 1 : 2);
    }
    return out;
}

FreshGradientNorms::FreshGradientNorms(const std::vector<torch::Tensor>& params, const std::vector<int>& group_of_param,
                                       const torch::Device& device, const std::vector<char>& routed)
    : params_(params) {
    const int64_t groups = static_cast<int64_t>(noiseScaleGroups().size());
    auto options = torch::TensorOptions(device).dtype(torch::kFloat64);
    own_ = torch::zeros({groups + 1}, options);
    pointAt(own_);
    window_ = torch::zeros({groups + 1}, options);
    routed_k_ = torch::zeros({0}, options);
    tokens_k_ = torch::zeros({0}, options);
    for (size_t i = 0; i < params_.size(); ++i) {
        if (!params_[i].requires_grad()) {
            hooks_.push_back(0);
            continue;
        }
        const int64_t group = group_of_param[i];
        const bool is_routed = i < routed.size() && routed[i];
        has_routed_ = has_routed_ || is_routed;
        const int64_t slot = is_routed ? groups : group;
        hooks_.push_back(params_[i].register_hook([this, slot](const torch::Tensor& grad) {
            bool full = false;
            {
                std::lock_guard<std::mutex> lock(pending_mutex_);
                pending_.push_back(grad);
                pending_slot_.push_back(slot);
                pending_bytes_ += grad.numel() * grad.element_size();
                full = pending_bytes_ >= kPendingBytes;
            }
            if (full) flush();
        }));
    }
}

FreshGradientNorms::~FreshGradientNorms() {
    for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].requires_grad()) params_[i].remove_hook(hooks_[i]);
}

void FreshGradientNorms::beginWindow(int64_t micro_batches) {
    window_.zero_();
    micro_index_ = 0;
    if (has_routed_) {
        if (routed_k_.size(0) != micro_batches) {  // K changes only with a ramp or a back-off
            routed_k_ = torch::zeros({micro_batches}, window_.options());
            tokens_k_ = torch::zeros({micro_batches}, window_.options());
        } else {
            routed_k_.zero_();
            tokens_k_.zero_();
        }
    }
}

void FreshGradientNorms::flush() {
    std::vector<torch::Tensor> grads;
    std::vector<int64_t> slots;
    {
        std::lock_guard<std::mutex> lock(pending_mutex_);
        grads.swap(pending_);
        slots.swap(pending_slot_);
        pending_bytes_ = 0;
    }
    if (grads.empty()) return;
    torch::NoGradGuard no_grad;
    if (micro_all_.device().is_cpu()) {
        // On the CPU each gradient's squares are summed in place in fp64, straight into the
        // slots: no operator per gradient (a stack of norms costs ~100 dispatches per flush).
        double* sums = micro_all_.data_ptr<double>();
        std::vector<torch::Tensor> rest;
        std::vector<int64_t> rest_slots;
        for (size_t i = 0; i < grads.size(); ++i) {
            if (kernels::sumOfSquaresTakes(grads[i])) {
                sums[slots[i]] += kernels::sumOfSquares(grads[i]);
            } else {
                rest.push_back(grads[i]);
                rest_slots.push_back(slots[i]);
            }
        }
        grads.swap(rest);
        slots.swap(rest_slots);
        if (grads.empty()) return;
    }
    // Each norm in the gradient's own dtype, then squared in fp64: no fp64 copy of a gradient.
    auto squares = torch::stack(at::_foreach_norm(grads, 2)).to(torch::kFloat64).square();
    auto index = copyToDevice(torch::tensor(slots, torch::kInt64), micro_all_.device());
    micro_all_.index_add_(0, index, squares);
}

void FreshGradientNorms::pointAt(const torch::Tensor& row) {
    const int64_t groups = row.size(0) - 1;
    micro_all_ = row;
    micro_ = micro_all_.narrow(0, 0, groups);
    micro_routed_ = micro_all_.narrow(0, groups, 1);
}

void FreshGradientNorms::useRows(int64_t micro_batches) {
    beginMicroBatch();  // nothing pending
    rows_ = torch::zeros({micro_batches, own_.size(0)}, own_.options());
}

void FreshGradientNorms::selectRow(int64_t k) {
    flush();  // what the hooks saw so far belongs to the row selected before
    pointAt(rows_[k]);
}

void FreshGradientNorms::endRows(const std::vector<torch::Tensor>& token_counts) {
    flush();
    for (size_t k = 0; k < token_counts.size(); ++k) {
        pointAt(rows_[static_cast<int64_t>(k)]);
        endMicroBatch(token_counts[k]);
    }
    pointAt(own_);
    rows_ = torch::Tensor();
}

void FreshGradientNorms::beginMicroBatch() {
    {
        std::lock_guard<std::mutex> lock(pending_mutex_);
        pending_.clear();
        pending_slot_.clear();
        pending_bytes_ = 0;
    }
    micro_all_.zero_();
}

void FreshGradientNorms::endMicroBatch(const torch::Tensor& token_count) {
    flush();
    torch::NoGradGuard no_grad;
    const int64_t groups = micro_.size(0);
    auto n = token_count.to(torch::kFloat64);
    window_.narrow(0, 0, groups).add_(micro_ / n.clamp_min(1.0));
    window_.narrow(0, groups, 1).add_(n.gt(0).to(torch::kFloat64));
    if (has_routed_ && micro_index_ < routed_k_.size(0)) {
        routed_k_.narrow(0, micro_index_, 1).copy_(micro_routed_);
        tokens_k_.narrow(0, micro_index_, 1).copy_(n.reshape({1}));
    }
    ++micro_index_;
}

}  // namespace trainbench
