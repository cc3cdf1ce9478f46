// The planner's step time: what one optimizer step costs on a target machine, term by term, from
// the config alone (no tensor is allocated), with the term that bounds it named. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "trainbench/memory_plan.h"
#include "trainbench/target_machine.h"

namespace trainbench {

// Each rank's seconds. A micro-batch's terms overlap (copies and collectives run on side
// streams beside the compute), so the longest sets its pace; the step's tail follows the last
// backward: the CPU optimizer over the node's slices, pipelined with the NVMe reads and writes
// (bucket b steps while b + 1 is read and b - 1 written), then the updated weights up. PCIe
// counts each direction against its own rate (full duplex); the node's host memory bandwidth is
// one budget that PCIe's copies, NVMe's transfers, the host's additions and the CPU step share.
struct StepTimePlan {
    double flops_per_micro_batch = 0;  // forward, backward and recomputation, one rank
    double compute_s = 0;         // flops at target compute_tflops x mfu
    double collectives_s = 0;     // the step's collective bytes / K at the node's (or network's) rate
    // PCIe is full duplex: each direction at its own rate, the slower one paces a micro-batch.
    double pcie_up_s = 0;         // offload all: the shard up for both gathers (the unit order: 1/K of a window's);
                                  // the unit order's boundary activations from host memory
    double pcie_down_s = 0;       // slice sums kept on the host: each micro-batch's slice down; boundaries to the host
    double pcie_s = 0;            // the longer of the two
    double nvme_read_s = 0;       // offload all with offload_dir: the shard read (the node's ranks together)
    // The gradient sums in offload_dir's file: a micro-batch's share (1/K) of the window's writes
    // of every unit's finished sums (the node's ranks together); the drives' time adds to the reads'.
    double nvme_write_s = 0;
    double host_adds_s = 0;       // slice sums kept on the host: each slice added there (the node's ranks)
    // The node's host memory, one budget for all its ranks: what PCIe moves both ways, NVMe's
    // reads and the host's additions, each micro-batch.
    double host_memory_s = 0;
    double micro_batch_s = 0;     // the longest of compute, collectives, PCIe, NVMe reads and host memory
    double gradients_down_s = 0;  // the gradient slice to the host, overlapping the last backward
    double optimizer_s = 0;       // CPU AdamW: bytes touched / the node's host memory bandwidth
    // The tail's host memory: the CPU step's bytes, NVMe's moves both ways, the gradients landing
    // after the window; at least optimizer_s.
    double tail_host_memory_s = 0;
    double nvme_step_s = 0;       // moments and master read and written; the gradient sums in a file read
    double weights_up_s = 0;      // the updated slice back to the device
    double step_s = 0;
    // What a step moves, every rank together, as the run's io/ points count it: up and down the
    // host link (io/to_device_bytes, io/to_host_bytes; a GPU's PCIe), read from and written to
    // NVMe (io/read_bytes, io/write_bytes).
    double to_device_bytes = 0, to_host_bytes = 0, nvme_read_bytes = 0, nvme_write_bytes = 0;
    std::string bound;            // "compute", "collectives", "PCIe", "NVMe" or "CPU AdamW"
    double bound_s = 0;           // that term's share of the step
    // The target fields whose figure is missing: their terms count 0 (step_s is then a floor).
    std::vector<std::string> unknown;
};

// The plan must be of `config` as it runs on the target (planOnTarget).
StepTimePlan predictStepTime(const RunConfig& config, const MemoryPlan& plan, const TargetMachine& target);

// "predicted 41.3 s per step, bound by CPU AdamW (24.0 s of it)"; with unknown figures, which.
std::string describeStepTime(const StepTimePlan& time);
std::string stepTimePlanToJson(const StepTimePlan& time);

// AdamW's bytes touched per parameter on the CPU: the gradient sum read in its dtype
// (`gradient_bytes` 4, or 2 under runtime.gradient_sum_dtype bf16), both moments read and
// written in their dtype (`moment_bytes` 4 or 2: 16 or 8) and the fp32 weight read and written
// (8), and with a bf16 copy of the weights written by the CPU the copy too. (The engine rounds
// bf16 device weights on the device at stages 1 and 2: 28 there with fp32 moments; at stage 3 the
// host rounds the bf16 shards: 30, or 22 with bf16 moments.)
int64_t cpuAdamWBytesPerParameter(int64_t device_weight_bytes, int64_t moment_bytes = 4, int64_t gradient_bytes = 4);

}  // namespace trainbench

// Floor: plan/ (engine/README.md)
