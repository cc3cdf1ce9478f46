// BatchPanel: the batch split m × K × W = B, what it costs in memory, the explorer that measures every split, and decoding's cache.
#pragma once

#include <cstdint>
#include <vector>

#include <QString>
#include <QWidget>

#include "batch/device_count_table.h"
#include "batch/what_fits_edit.h"
#include "common/config_edit.h"
#include "trainbench/batch_explorer.h"
#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"
#include "trainbench/target_machine.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QSpinBox;

namespace trainbench::gui {

class ExplorerBox;
class ExplorerChart;
class ExplorerTableModel;
class CriticalBatchBox;
class DeviceCountDialog;
class InferenceCacheBox;
class LaunchLinesView;
class MachineProbeBox;
class OffloadChoice;
class OffloadTiers;
class PrecisionBox;
class StepTimeChart;
class TargetPicker;

// The panel edits a copy of the window's config and asks for each change it makes (a split, a
// memory layout, offload, precision, target, what fits) as one configEditRequested: the fields
// that change and the name of the undo step. The owner applies it (or, refusing, hands the panel
// its config back).
//
// Micro-batch edits re-split the global batch the user chose: K becomes B / (m W) when m
// divides B / W; otherwise K is the nearest whole number and B moves, until a later m divides
// the chosen B again. Accumulation edits choose a new B. The spin box's arrows step through
// the divisors of B / W.
//
// The memory plan, the layout choices' peaks, the advice and the step time are for the config's
// target machine (target section: resolveTarget, planOnTarget, adviseOnTarget, predictStepTime);
// with target.kind here that is this machine as runtime says. Start's refusal stays this
// machine's (requirePlanFits): runtime says where a run trains.
//
// This machine knows no rate until it is measured: under the step time, "Measure this machine"
// (MachineProbeBox) runs the machine probe off the GUI thread and keeps its figures in the
// settings as this machine's; with target.kind here the plan reads them wherever the target
// section leaves a rate 0 (plannedConfig). They stay out of the config, which may travel to
// another machine; the next start plans with them without measuring.
//
// The target is picked at the top (TargetPicker: this machine, or N devices of a named GPU kind
// or of a custom memory), each change one edit. "Apply what fits", under the advice, asks for
// the target's cheapest layout and m (whatFitsEdit) as one edit; "By
// device count…" opens the DeviceCountDialog for the config and the published configs the owner
// hands over (setPublishedConfigs).
//
// Widgets that tests drive carry object names: batchPanel, microBatchSpin, accumulationSpin,
// planTargetLabel, planPeakLabel, stepTimeLabel, stepTimeChart, layoutAdviceLabel, applyWhatFitsButton, whatFitsNoteLabel,
// deviceCountButton, zeroStageCombo, recomputationCombo; those of the MachineProbeBox
// (measureMachineButton, machineProbeProgress, machineProbeLabel); those of the ExplorerBox (exploreButton,
// stopExploreButton, applyRecommendationButton, explorerStatusLabel, explorerTable, explorerChart);
// and those of the CriticalBatchBox, the OffloadChoice (offloadCombo, offloadDirEdit),
// the TargetPicker (targetKindCombo, targetDevicesSpin, ...), the PrecisionBox (precisionBox,
// precisionChoice<i>, ...), the OffloadTiers (planBudgetBar, planHostBar, planDiskBar, planVerdictLabel, ...) and the
// InferenceCacheBox (decoding's cache in both MLA forms, beside the training numbers).
class BatchPanel : public QWidget {
    Q_OBJECT

public:
    explicit BatchPanel(QWidget* parent = nullptr);

    // Shows a config chosen elsewhere; its global batch becomes the one micro-batch edits keep.
    void setRunConfig(const RunConfig& config);
    // The config's file, which the launch lines name (empty: not saved yet, a placeholder name).
    void setConfigFile(const QString& path);
    const RunConfig& runConfig() const { return config_; }
    // While a run is live the split cannot change and the explorer cannot start.
    void setRunLive(bool live);
    // The newest run's critical batch (noise/critical_batch_sequences and its relative error),
    // shown beside B with a sentence of advice; 0 sequences: none measured.
    void setCriticalBatch(double sequences, double relative_error, int64_t step);
    // The newest checkpoint of the run (a directory), which "Measure at checkpoint" measures at
    // fixed weights over the validation windows; empty: none yet.
    void setLatestCheckpoint(const QString& path, int64_t step);
    // Starts that measurement; false when there is no checkpoint, a run is live or one runs.
    bool measureCriticalBatch();
    bool isMeasuring() const;
    // "Measure this machine": its host copy and CPU matrix rates (and runtime.offload_dir's),
    // kept in the settings and planned with; false while a run is live, the explorer or another
    // measurement runs. machineMeasured follows.
    bool measureMachine();
    bool isMeasuringMachine() const;
    // Bytes per copy buffer and through the directory in that measurement (256 MiB, as
    // `trainbench-cli probe`); tests measure less.
    void setMachineProbeBytes(int64_t bytes);
    bool isExploring() const;
    // Training steps per explored split (the first is warm-up and not in the rate).
    void setExploreStepsPerRow(int64_t steps);

    // The per-rank budget plans are compared against: runtime.memory_limit_mb when set, else
    // the device memory a rank may use (deviceMemoryBytesPerRank); 0 when unknown.
    static int64_t memoryBudgetBytes(const RunConfig& config);
    PrecisionBox* precisionBox() const { return precision_box_; }
    // runConfig() with this machine's measured rates in its target section (target.kind here,
    // where the section leaves them 0): the config target() is resolved from.
    const RunConfig& plannedConfig() const { return planned_config_; }
    // planOnTarget(runConfig(), target()).
    const MemoryPlan& memoryPlan() const { return plan_; }
    const TargetMachine& target() const { return target_; }
    // adviseOnTarget(runConfig(), target()), and what applying it would make of the config.
    const TargetAdvice& targetAdvice() const { return advice_; }
    const WhatFitsEdit& whatFits() const { return what_fits_; }
    // The configs whose guides' claims the device-count dialog answers (config_16B on 1 ...).
    void setPublishedConfigs(std::vector<PublishedConfig> published) { published_ = std::move(published); }
    // Why the engine would refuse to start the shown config for its memory (its own message),
    // or empty when it would start. A budget set with runtime.memory_limit_mb refuses only
    // when micro-batch 1 cannot fit (a larger one backs off while training).
    const QString& startRefusal() const { return start_refusal_; }
    ExplorerTableModel* explorerModel() const;
    ExplorerChart* explorerChart() const;

public Q_SLOTS:
    // Starts measuring every split of the shown config's global batch; false while a run is
    // live or an exploration is already running.
    bool explore();
    // Ends the exploration after the split being measured.
    void stopExploring();
    // Sets m and K to the recommended split of the finished exploration; false when there is
    // none for the shown config's global batch.
    bool applyRecommendation();
    // Asks for whatFits().config as one edit; false when it does not apply or a run is live.
    bool applyWhatFits();
    // Opens (or raises) the dialog of what fits by device count, computed for the shown config.
    DeviceCountDialog* showDeviceCounts();

Q_SIGNALS:
    // A "Measure at checkpoint" ended (its result is on the panel, or the error).
    void criticalBatchMeasured(bool ok);
    // A "Measure this machine" ended: ok, its figures are kept and planned with; else the
    // engine's message is on the panel.
    void machineMeasured(bool ok);
    // A change made here, as one undoable edit; the owner applies it or hands the panel its
    // config back. Each one of:
    // - the split: train.micro_batch_size and train.gradient_accumulation_steps (and
    //   train.global_batch_size, when set, following them), "Batch split m 4 × K 4";
    // - the memory layout: runtime.zero_stage, runtime.activation_checkpointing and
    //   runtime.expert_parallel, "Memory layout: ...";
    // - offload: runtime.offload ("none" | "optimizer" | "all") and runtime.offload_dir (empty:
    //   host memory), "Offload: ...";
    // - the precision box's choice: runtime.dtype and runtime.optimizer_dtype, "Precision: ...";
    // - the picker's target section, "Target: ...";
    // - "Apply what fits": the layout, m and K (and, when EP needs them, the ranks) the advice
    //   names, described as whatFits() describes it.
    void configEditRequested(const trainbench::gui::ConfigEdit& edit);
    void exploringChanged(bool exploring);
    // An exploration ended, with its rows in explorerModel() (and a recommendation, if any fit).
    void explorationFinished();
    // The plan was computed again (a new config or split): memoryPlan() and startRefusal().
    void planChanged();

private:
    void buildUi();
    void showSplit();
    void showPlan();
    void showPlanNumbers();
    void updateControls();
    void onMicroBatchEdited(int value);
    void onAccumulationEdited(int value);
    void requestSplit(int64_t micro_batch, int64_t accumulation);
    void onMemoryLayoutEdited();
    void onOffloadEdited(const QString& offload, const QString& offload_dir);
    void onTargetEdited(const TargetConfig& target);
    void onPrecisionEdited(const QString& dtype, const QString& optimizer_dtype);
    // Asks for what turned `before` into the panel's config as one edit named `description`.
    void requestEdit(const RunConfig& before, const QString& description);
    // Each choice of the two layout boxes with the peak it would plan, the others as they are.
    void showLayoutChoices();
    // The explorer's recommended row made the config's: its layout and offload as the same
    // edits as a user's choice, then its split.
    void applyExploreRow(const ExploreRow& best);

    RunConfig config_;
    RunConfig planned_config_;  // config_ with this machine's measured rates (plannedConfig)
    TargetMachine target_;
    MemoryPlan plan_;
    TargetAdvice advice_;
    WhatFitsEdit what_fits_;
    std::vector<PublishedConfig> published_;
    QString start_refusal_;
    int64_t budget_bytes_ = 0;
    // The global batch micro-batch edits keep; K edits and new configs choose it.
    int64_t chosen_global_batch_ = 1;
    bool run_live_ = false;

    ExplorerBox* explorer_ = nullptr;

    QSpinBox* micro_batch_spin_ = nullptr;
    QSpinBox* accumulation_spin_ = nullptr;
    QLabel* world_size_label_ = nullptr;
    QLabel* global_batch_label_ = nullptr;
    QLabel* tokens_label_ = nullptr;
    QLabel* split_hint_label_ = nullptr;
    QComboBox* zero_stage_combo_ = nullptr;
    QComboBox* recompute_combo_ = nullptr;
    QComboBox* expert_parallel_combo_ = nullptr;  // the EP values dividing W and the routed experts
    OffloadChoice* offload_choice_ = nullptr;
    OffloadTiers* offload_tiers_ = nullptr;  // the memory box's device, host and NVMe rows
    PrecisionBox* precision_box_ = nullptr;
    TargetPicker* target_picker_ = nullptr;
    QPushButton* device_count_button_ = nullptr;
    DeviceCountDialog* device_count_dialog_ = nullptr;
    QPushButton* apply_fit_button_ = nullptr;
    QLabel* fit_note_label_ = nullptr;

    CriticalBatchBox* critical_batch_ = nullptr;
    InferenceCacheBox* inference_cache_ = nullptr;
    QLabel* collectives_label_ = nullptr;
    // How the ranks run, and the torchrun and srun lines that start them as processes.
    LaunchLinesView* launch_lines_ = nullptr;
    QString config_file_;  // the file the lines name
    QLabel* step_time_label_ = nullptr;
    StepTimeChart* step_chart_ = nullptr;
    MachineProbeBox* machine_probe_ = nullptr;
    QLabel* advice_label_ = nullptr;
    QLabel* target_label_ = nullptr;
    QLabel* weights_label_ = nullptr;
    QLabel* gradients_label_ = nullptr;
    QLabel* buckets_label_ = nullptr;
    QLabel* optimizer_label_ = nullptr;
    QLabel* activations_label_ = nullptr;
    QLabel* boundaries_label_ = nullptr;  // the unit order's only
    QFormLayout* memory_form_ = nullptr;
    QLabel* logits_label_ = nullptr;
    QLabel* peak_label_ = nullptr;
};

}  // namespace trainbench::gui
