// The config's choice fields as enums. The config keeps each as the string a user writes (the
// JSON contract); code reads it through the accessors in run_config.h (dataSource(config.data)
// and the like), so a comparison is checked by the compiler, and each field's allowed names live
// in one table here that the validator and the schema list too. Torch-free: the GUI includes it.
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trainbench {

enum class ScoreFunction { Softmax, Sigmoid };        // model.score_func
enum class CheckpointDtype { Bf16, Fp8 };             // model.dtype (the published checkpoint's storage)
enum class LrSchedule { Constant, Cosine, Linear };   // train.schedule
enum class LossNormalization { Tokens };              // train.loss_normalization
enum class IncompleteWindow { Scale, Drop };          // train.incomplete_window
enum class BatchPolicy { Fixed, Ramp, Adaptive };     // train.batch_policy
enum class LrBatchRule { Sqrt, Linear, None };        // train.lr_batch_rule
enum class DataSource { Markov, Text, Tokens, Jsonl, Parquet, HfDataset };  // data.source
enum class RowLayout { Packed, Padded };              // data.layout
enum class TokenWidth { UInt16, UInt32 };             // data.dtype
enum class ComputeDtype { Fp32, Bf16, Fp8, Auto };   // runtime.dtype
enum class OptimizerDtype { Fp32, Bf16 };            // runtime.optimizer_dtype
enum class GradientSumDtype { Fp32, Bf16 };          // runtime.gradient_sum_dtype
enum class Recomputation { None, Feedforward, Full };  // runtime.activation_checkpointing
enum class Offload { None, Optimizer, All };          // runtime.offload
enum class WindowSchedule { MicroBatch, Unit, Auto };  // runtime.window_schedule
enum class TargetKind { Here, A100_40, A100_80, H100_80, H200_141, B200_180, Custom };  // target.kind

// Each enum's names, in the enum's order: ChoiceNames<E>::names[int(e)] is e's name.
template <class E> struct ChoiceNames;
#define TRAINBENCH_CHOICE_NAMES(E, ...) \
    template <> struct ChoiceNames<E> { static constexpr std::array names{__VA_ARGS__}; }
TRAINBENCH_CHOICE_NAMES(ScoreFunction, "softmax", "sigmoid");
TRAINBENCH_CHOICE_NAMES(CheckpointDtype, "bf16", "fp8");
TRAINBENCH_CHOICE_NAMES(LrSchedule, "constant", "cosine", "linear");
TRAINBENCH_CHOICE_NAMES(LossNormalization, "tokens");
TRAINBENCH_CHOICE_NAMES(IncompleteWindow, "scale", "drop");
TRAINBENCH_CHOICE_NAMES(BatchPolicy, "fixed", "ramp", "adaptive");
TRAINBENCH_CHOICE_NAMES(LrBatchRule, "sqrt", "linear", "none");
TRAINBENCH_CHOICE_NAMES(DataSource, "markov", "text", "tokens", "jsonl", "parquet", "hf_dataset");
TRAINBENCH_CHOICE_NAMES(RowLayout, "packed", "padded");
TRAINBENCH_CHOICE_NAMES(TokenWidth, "uint16", "uint32");
TRAINBENCH_CHOICE_NAMES(ComputeDtype, "fp32", "bf16", "fp8", "auto");
TRAINBENCH_CHOICE_NAMES(OptimizerDtype, "fp32", "bf16");
TRAINBENCH_CHOICE_NAMES(GradientSumDtype, "fp32", "bf16");
TRAINBENCH_CHOICE_NAMES(Recomputation, "none", "feedforward", "full");
TRAINBENCH_CHOICE_NAMES(Offload, "none", "optimizer", "all");
TRAINBENCH_CHOICE_NAMES(WindowSchedule, "micro_batch", "unit", "auto");
TRAINBENCH_CHOICE_NAMES(TargetKind, "here", "a100-40", "a100-80", "h100-80", "h200-141", "b200-180", "custom");
#undef TRAINBENCH_CHOICE_NAMES

template <class E> const char* choiceName(E value) { return ChoiceNames<E>::names[static_cast<size_t>(value)]; }

template <class E> std::vector<std::string> choiceNames() {
    return {ChoiceNames<E>::names.begin(), ChoiceNames<E>::names.end()};
}

// Whether `name` is e's: a test that never throws, for a config not validated yet (the
// validator's own rules, a form being edited).
template <class E> bool isChoice(const std::string& name, E value) { return name == choiceName(value); }

// The enum a name stands for; std::invalid_argument for a name not in the table (the validator
// rejects those first, naming the field, so a validated config never throws here).
template <class E> E parseChoice(const std::string& name) {
    const auto& names = ChoiceNames<E>::names;
    for (size_t i = 0; i < names.size(); ++i)
        if (name == names[i]) return static_cast<E>(i);
    throw std::invalid_argument("\"" + name + "\" is not a known choice");
}

}  // namespace trainbench

// Floor: config/ (engine/README.md)
