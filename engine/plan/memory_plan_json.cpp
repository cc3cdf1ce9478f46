// The memory planner's answers as JSON (`plan --json`, the GUI's advice): every field of a plan,
// its placement, and the advised layouts.
#include "trainbench/memory_plan.h"

#include <nlohmann/json.hpp>

namespace trainbench {

std::string layoutAdviceToJson(const LayoutAdvice& a) {
    auto layout = [](const MemoryLayout& l, const MemoryPlan& plan) {
        return nlohmann::json{{"zero_stage", l.zero_stage},
                              {"activation_checkpointing", l.activation_checkpointing},
                              {"expert_parallel", l.expert_parallel},
                              {"micro_batch_size", l.micro_batch_size},
                              {"offload", l.offload},
                              {"offload_nvme", l.nvme},
                              {"peak_bytes", plan.peak_bytes},
                              {"host_bytes", plan.host_bytes},
                              {"nvme_bytes", plan.nvme_bytes},
                              {"window_schedule", plan.placement.unit_order ? "unit" : "micro_batch"},
                              {"gradient_sums", tierName(plan.placement.gradient_sums)}};
    };
    nlohmann::json j = {{"limit_bytes", a.limit_bytes}};
    j["cheapest"] = a.cheapest.micro_batch_size > 0 ? layout(a.cheapest, a.cheapest_plan) : nlohmann::json();
    j["fewest_ranks"] = a.fewest_ranks > 0 ? nlohmann::json{{"world_size", a.fewest_ranks},
                                                             {"layout", layout(a.fewest_ranks_layout, a.fewest_ranks_plan)}}
                                           : nlohmann::json();
    return j.dump();
}

namespace {

nlohmann::json placementJson(const Placement& place) {
    return {{"sharded", {{"moments", place.sharded.moments}, {"gradients", place.sharded.gradients},
                         {"weights", place.sharded.weights}}},
            {"host_step", place.host_step},
            {"moments", tierName(place.moments)},
            {"master", tierName(place.master)},
            {"gradient_sums", tierName(place.gradient_sums)},
            {"weights", tierName(place.weights)},
            {"bf16_device_weights", place.bf16_device_weights},
            {"unit_order", place.unit_order},
            {"boundaries", tierName(place.boundaries)}};
}

}  // namespace

std::string memoryPlanToJson(const MemoryPlan& p) {
    nlohmann::json j = {
        {"micro_batch_size", p.micro_batch_size},
        {"gradient_accumulation_steps", p.gradient_accumulation_steps},
        {"zero_stage", p.zero_stage},
        {"placement", placementJson(p.placement)},
        {"activation_checkpointing", p.activation_checkpointing},
        {"expert_parallel", p.expert_parallel},
        {"seq_len", p.seq_len},
        {"world_size", p.world_size},
        {"global_batch_size", p.global_batch_size},
        {"tokens_per_step", p.tokens_per_step},
        {"weight_bytes", p.weight_bytes},
        {"gradient_bytes", p.gradient_bytes},
        {"gradient_sum_element_bytes", p.gradient_sum_element_bytes},
        {"bucket_bytes", p.bucket_bytes},
        {"optimizer_bytes", p.optimizer_bytes},
        {"slice_elements", p.slice_elements},
        {"weight_element_bytes", p.weight_element_bytes},
        {"gradients_on_host", p.gradients_on_host},
        {"gradients_in_file", p.gradients_in_file},
        {"nvme_gradient_bytes", p.nvme_gradient_bytes},
        {"host_moment_bytes", p.host_moment_bytes},
        {"host_master_bytes", p.host_master_bytes},
        {"host_gradient_bytes", p.host_gradient_bytes},
        {"host_staging_bytes", p.host_staging_bytes},
        {"host_bytes", p.host_bytes},
        {"nvme_bytes", p.nvme_bytes},
        {"ranks_per_node", p.ranks_per_node},
        {"host_limit_bytes", p.host_limit_bytes},
        {"nvme_limit_bytes", p.nvme_limit_bytes},
        {"fits_device", p.fits_device},
        {"fits_host", p.fits_host},
        {"fits_nvme", p.fits_nvme},
        {"activation_bytes", p.activation_bytes},
        {"window_schedule", p.placement.unit_order ? "unit" : "micro_batch"},
        {"boundary_bytes", p.boundary_bytes},
        {"device_boundary_bytes", p.device_boundary_bytes},
        {"host_boundary_bytes", p.host_boundary_bytes},
        {"nvme_boundary_bytes", p.nvme_boundary_bytes},
        {"shard_gathered_bytes_per_step", p.shard_gathered_bytes_per_step},
        {"logits_bytes", p.logits_bytes},
        {"head_chunk_tokens", p.head_chunk_tokens},
        {"peak_bytes", p.peak_bytes},
        {"collectives_per_step", p.collectives_per_step},
        {"bytes_sent_per_step", p.bytes_sent_per_step},
        {"all_to_all_bytes_per_micro_batch", p.all_to_all_bytes_per_micro_batch},
        {"limit_bytes", p.limit_bytes},
        {"fits", p.fits},
        {"largest_fitting_micro_batch", p.largest_fitting_micro_batch},
    };
    return j.dump();
}

}  // namespace trainbench
