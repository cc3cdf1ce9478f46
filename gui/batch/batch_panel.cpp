// BatchPanel: the batch split m × K × W = B, what it costs in memory, the explorer that measures every split, and decoding's cache.
#include "batch/batch_panel.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "common/display_format.h"
#include "common/precision_fits.h"
#include "batch/explorer_box.h"
#include "batch/critical_batch_box.h"
#include "batch/device_count_dialog.h"
#include "batch/inference_cache_box.h"
#include "batch/machine_figures.h"
#include "batch/machine_probe_box.h"
#include "batch/launch_lines_view.h"
#include "batch/offload_choice.h"
#include "batch/offload_tiers.h"
#include "batch/plan_wording.h"
#include "batch/step_time_chart.h"
#include "batch/precision_box.h"
#include "batch/target_picker.h"
#include "trainbench/config_io.h"
#include "trainbench/divisors.h"
#include "trainbench/step_time.h"

namespace trainbench::gui {

namespace {

const QColor kNoteColor(150, 95, 0);

// Far beyond any batch trained in practice (DeepSeek-V3: B 15,360 sequences), and small
// enough that the planner's search over every m up to m × K stays instant while one types.
constexpr int kLargestMicroBatch = 4096;
constexpr int kLargestAccumulation = 16384;
constexpr int64_t kBytesPerMiB = 1024 * 1024;
// The split, layout and memory column: wide enough that the combos' "· peak 123.4 GiB" and the
// tiers' bars read whole, with room for a scroll bar, and narrow enough that the explorer's
// buttons still fit a 1280-pixel window beside the config dock.
constexpr int kLeftColumnWidth = 360;
// A layout combo's closed box: it elides beyond this many characters (its list shows them whole),
// so long choices cannot widen the column.
constexpr int kLayoutComboCharacters = 18;

// Arrows step m through the divisors of the per-rank batch, so each step is a re-split of the
// same global batch; typed values are taken as they are.
class DivisorSpinBox : public QSpinBox {
public:
    using QSpinBox::QSpinBox;

    void setDivisorsOf(int64_t n) { divisors_ = divisorsOf(std::max<int64_t>(n, 1)); }

    void stepBy(int steps) override {
        int64_t value = this->value();
        for (; steps > 0; --steps) {
            const auto next = std::upper_bound(divisors_.begin(), divisors_.end(), value);
            value = next != divisors_.end() ? *next : value + 1;
        }
        for (; steps < 0; ++steps) {
            const auto next = std::lower_bound(divisors_.begin(), divisors_.end(), value);
            if (next != divisors_.begin()) value = *std::prev(next);
        }
        setValue(static_cast<int>(std::clamp<int64_t>(value, minimum(), maximum())));
        selectAll();
    }

private:
    std::vector<int64_t> divisors_{1};
};

QLabel* valueLabel(const QString& object_name, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(object_name);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return label;
}

QString colored(const QString& text, const QColor& color) {
    return QStringLiteral("<span style=\"color:%1\">%2</span>").arg(color.name(), text.toHtmlEscaped());
}

}  // namespace

BatchPanel::BatchPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("batchPanel"));
    buildUi();
    setRunConfig(RunConfig{});
}

void BatchPanel::buildUi() {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(10, 10, 10, 10);
    layout->setSpacing(10);

    // The split and its plan need little width; the explorer's table and chart get the rest.
    // The column scrolls: with offload its tiers and the advice outgrow a laptop's height, and
    // a squeezed column would clip its wrapped lines.
    auto* left_scroll = new QScrollArea(this);
    left_scroll->setObjectName(QStringLiteral("batchPlanScroll"));
    left_scroll->setFrameShape(QFrame::NoFrame);
    left_scroll->setWidgetResizable(true);
    left_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    left_scroll->setFixedWidth(kLeftColumnWidth);
    auto* left_column = new QWidget(left_scroll);
    auto* left = new QVBoxLayout(left_column);
    left->setContentsMargins(0, 0, 0, 0);
    left->setSpacing(10);
    left_scroll->setWidget(left_column);
    layout->addWidget(left_scroll, 0);

    // The machine the plan is for, first: every number below is for it.
    auto* target_box = new QGroupBox(tr("Target machine"), left_column);
    auto* target_layout = new QVBoxLayout(target_box);
    target_picker_ = new TargetPicker(target_box);
    target_layout->addWidget(target_picker_);
    connect(target_picker_, &TargetPicker::targetRequested, this, &BatchPanel::onTargetEdited);
    device_count_button_ = new QPushButton(tr("By device count…"), target_box);
    device_count_button_->setObjectName(QStringLiteral("deviceCountButton"));
    device_count_button_->setToolTip(tr("What fits on 1 to 64 devices of this kind, and the published configs' "
                                        "claims (16B on 1, 236B on 4, 671B on 8 GPUs of 80 GB)"));
    connect(device_count_button_, &QPushButton::clicked, this, &BatchPanel::showDeviceCounts);
    target_layout->addWidget(device_count_button_, 0, Qt::AlignLeft);
    left->addWidget(target_box);

    // The split: m and K are edited, W comes from the runtime, B follows.
    auto* split_box = new QGroupBox(tr("Batch split"), left_column);
    auto* split_layout = new QVBoxLayout(split_box);
    auto* equation = new QHBoxLayout;
    equation->setSpacing(6);
    micro_batch_spin_ = new DivisorSpinBox(split_box);
    micro_batch_spin_->setObjectName(QStringLiteral("microBatchSpin"));
    micro_batch_spin_->setRange(1, kLargestMicroBatch);
    micro_batch_spin_->setToolTip(tr("m: sequences per forward pass on each rank. The arrows step through the "
                                     "splits of the global batch."));
    accumulation_spin_ = new QSpinBox(split_box);
    accumulation_spin_->setObjectName(QStringLiteral("accumulationSpin"));
    accumulation_spin_->setRange(1, kLargestAccumulation);
    accumulation_spin_->setToolTip(tr("K: micro-batches whose gradients add up to one optimizer step. "
                                      "Changing K changes the global batch."));
    // As wide as the largest value needs, no wider: the equation reads as one line.
    for (QSpinBox* spin : {micro_batch_spin_, accumulation_spin_}) {
        spin->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
        spin->setAlignment(Qt::AlignRight);
    }
    world_size_label_ = new QLabel(split_box);
    world_size_label_->setObjectName(QStringLiteral("worldSizeLabel"));
    world_size_label_->setToolTip(tr("W: ranks (runtime.world_size)"));
    global_batch_label_ = new QLabel(split_box);
    global_batch_label_->setObjectName(QStringLiteral("globalBatchLabel"));
    global_batch_label_->setToolTip(tr("B: sequences per optimizer step"));
    QFont bold = global_batch_label_->font();
    bold.setBold(true);
    global_batch_label_->setFont(bold);
    equation->addWidget(new QLabel(tr("m"), split_box));
    equation->addWidget(micro_batch_spin_);
    equation->addWidget(new QLabel(tr("× K"), split_box));
    equation->addWidget(accumulation_spin_);
    equation->addWidget(world_size_label_);
    equation->addWidget(global_batch_label_);
    equation->addStretch(1);
    split_layout->addLayout(equation);
    tokens_label_ = new QLabel(split_box);
    tokens_label_->setObjectName(QStringLiteral("splitTokensLabel"));
    tokens_label_->setWordWrap(true);
    split_layout->addWidget(tokens_label_);
    split_hint_label_ = new QLabel(split_box);
    split_hint_label_->setObjectName(QStringLiteral("splitHintLabel"));
    split_hint_label_->setWordWrap(true);
    split_hint_label_->setTextFormat(Qt::RichText);
    split_layout->addWidget(split_hint_label_);
    // The critical batch the last run measured (its noise scale), against this B.
    critical_batch_ = new CriticalBatchBox(split_box);
    split_layout->addWidget(critical_batch_);
    // This machine measures one thing at a time: the machine probe waits while this measures.
    connect(critical_batch_, &CriticalBatchBox::measuringStarted, this, &BatchPanel::updateControls);
    connect(critical_batch_, &CriticalBatchBox::measured, this, [this](bool ok) {
        updateControls();
        Q_EMIT criticalBatchMeasured(ok);
    });
    left->addWidget(split_box);

    // What each rank keeps: sharded optimizer state and recomputed activations, each choice
    // with the peak it would plan.
    auto* layout_box = new QGroupBox(tr("Memory layout"), left_column);
    auto* layout_form = new QFormLayout(layout_box);
    layout_form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    zero_stage_combo_ = new QComboBox(layout_box);
    zero_stage_combo_->setObjectName(QStringLiteral("zeroStageCombo"));
    zero_stage_combo_->addItem(QString(), 0);
    zero_stage_combo_->addItem(QString(), 1);
    zero_stage_combo_->addItem(QString(), 2);
    zero_stage_combo_->addItem(QString(), 3);
    zero_stage_combo_->setToolTip(tr("runtime.zero_stage: stage 1 keeps the AdamW moments of 1/W of the "
                                     "parameters on each rank, stage 2 their gradients too, stage 3 their "
                                     "weights too (each block gathered while it runs); the numbers stay "
                                     "those of stage 0"));
    recompute_combo_ = new QComboBox(layout_box);
    recompute_combo_->setObjectName(QStringLiteral("recomputationCombo"));
    recompute_combo_->addItem(QString(), QStringLiteral("none"));
    recompute_combo_->addItem(QString(), QStringLiteral("feedforward"));
    recompute_combo_->addItem(QString(), QStringLiteral("full"));
    recompute_combo_->setToolTip(tr("runtime.activation_checkpointing: feedforward keeps only the input of each "
                                    "block's MoE or MLP and runs it again in the backward; full does so for the "
                                    "whole block (less memory, more compute)"));
    expert_parallel_combo_ = new QComboBox(layout_box);
    expert_parallel_combo_->setObjectName(QStringLiteral("expertParallelCombo"));
    expert_parallel_combo_->setToolTip(tr("runtime.expert_parallel: groups of EP ranks divide the routed experts of "
                                          "every MoE layer and exchange each token with its experts' rank (an "
                                          "all-to-all there and back); with every ZeRO stage (at stage 3 each unit's experts are "
                                          "gathered over the ranks holding the same ones)"));
    for (QComboBox* combo : {zero_stage_combo_, recompute_combo_, expert_parallel_combo_}) {
        combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        combo->setMinimumContentsLength(kLayoutComboCharacters);
    }
    layout_form->addRow(tr("ZeRO stage:"), zero_stage_combo_);
    layout_form->addRow(tr("Experts:"), expert_parallel_combo_);
    layout_form->addRow(tr("Recompute:"), recompute_combo_);
    offload_choice_ = new OffloadChoice(layout_box);
    layout_form->addRow(tr("Offload:"), offload_choice_);
    layout_form->addRow(offload_choice_->noteLabel());
    connect(offload_choice_, &OffloadChoice::offloadRequested, this, &BatchPanel::onOffloadEdited);
    collectives_label_ = valueLabel(QStringLiteral("planCollectivesLabel"), layout_box);
    collectives_label_->setToolTip(tr("What each rank sends per optimizer step (ring all-reduce, reduce-scatter, "
                                      "all-gather) and the collective calls it makes"));
    layout_form->addRow(tr("Collectives:"), collectives_label_);
    launch_lines_ = new LaunchLinesView(layout_box);
    layout_form->addRow(tr("Ranks:"), launch_lines_);
    // The step this layout takes on the target, in the planner's sentence; its terms in the tooltip.
    step_time_label_ = new QLabel(layout_box);
    step_time_label_->setObjectName(QStringLiteral("stepTimeLabel"));
    step_time_label_->setWordWrap(true);
    step_time_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout_form->addRow(tr("Step time:"), step_time_label_);
    step_chart_ = new StepTimeChart(layout_box);
    layout_form->addRow(step_chart_);
    // This machine's rates, measured here when the step time lacks them; the plan follows.
    machine_probe_ = new MachineProbeBox(layout_box);
    layout_form->addRow(machine_probe_);
    connect(machine_probe_, &MachineProbeBox::measuringStarted, this, &BatchPanel::updateControls);
    connect(machine_probe_, &MachineProbeBox::measured, this, [this](bool ok) {
        if (ok) showPlan();
        updateControls();
        Q_EMIT machineMeasured(ok);
    });
    // What fits the budget: the cheapest layout on these ranks (with offload when nothing fits
    // without), and the fewest ranks at m = 1.
    advice_label_ = new QLabel(layout_box);
    advice_label_->setObjectName(QStringLiteral("layoutAdviceLabel"));
    advice_label_->setWordWrap(true);
    advice_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout_form->addRow(advice_label_);
    apply_fit_button_ = new QPushButton(tr("Apply what fits"), layout_box);
    apply_fit_button_->setObjectName(QStringLiteral("applyWhatFitsButton"));
    connect(apply_fit_button_, &QPushButton::clicked, this, &BatchPanel::applyWhatFits);
    layout_form->addRow(apply_fit_button_);
    fit_note_label_ = new QLabel(layout_box);
    fit_note_label_->setObjectName(QStringLiteral("whatFitsNoteLabel"));
    fit_note_label_->setWordWrap(true);
    fit_note_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout_form->addRow(fit_note_label_);
    left->addWidget(layout_box);
    // What the compute precision and the moments' storage do to the peak and the largest m, at the
    // layout chosen above.
    precision_box_ = new PrecisionBox(left_column);
    connect(precision_box_, &PrecisionBox::precisionRequested, this, &BatchPanel::onPrecisionEdited);
    left->addWidget(precision_box_);
    connect(zero_stage_combo_, &QComboBox::currentIndexChanged, this, &BatchPanel::onMemoryLayoutEdited);
    connect(recompute_combo_, &QComboBox::currentIndexChanged, this, &BatchPanel::onMemoryLayoutEdited);
    connect(expert_parallel_combo_, &QComboBox::currentIndexChanged, this, &BatchPanel::onMemoryLayoutEdited);

    connect(micro_batch_spin_, &QSpinBox::valueChanged, this, &BatchPanel::onMicroBatchEdited);
    connect(accumulation_spin_, &QSpinBox::valueChanged, this, &BatchPanel::onAccumulationEdited);

    // The planner's bytes per rank, by kind, against the budget.
    auto* memory_box = new QGroupBox(tr("Memory per rank (planned)"), left_column);
    auto* memory_form = memory_form_ = new QFormLayout(memory_box);
    memory_form->setLabelAlignment(Qt::AlignRight);
    memory_form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    memory_form->setVerticalSpacing(4);
    // The machine the plan is for: the target section's, not necessarily the one a run trains on.
    target_label_ = new QLabel(memory_box);
    target_label_->setObjectName(QStringLiteral("planTargetLabel"));
    target_label_->setWordWrap(true);
    target_label_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    target_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    memory_form->addRow(tr("Planned for:"), target_label_);
    weights_label_ = valueLabel(QStringLiteral("planWeightsLabel"), memory_box);
    gradients_label_ = valueLabel(QStringLiteral("planGradientsLabel"), memory_box);
    buckets_label_ = valueLabel(QStringLiteral("planBucketsLabel"), memory_box);
    optimizer_label_ = valueLabel(QStringLiteral("planOptimizerLabel"), memory_box);
    activations_label_ = valueLabel(QStringLiteral("planActivationsLabel"), memory_box);
    boundaries_label_ = valueLabel(QStringLiteral("planBoundariesLabel"), memory_box);
    logits_label_ = valueLabel(QStringLiteral("planLogitsLabel"), memory_box);
    peak_label_ = valueLabel(QStringLiteral("planPeakLabel"), memory_box);
    peak_label_->setFont(bold);
    memory_form->addRow(tr("Weights:"), weights_label_);
    memory_form->addRow(tr("Gradients:"), gradients_label_);
    memory_form->addRow(tr("Reduction buffers:"), buckets_label_);
    memory_form->addRow(tr("AdamW moments:"), optimizer_label_);
    memory_form->addRow(tr("Activations:"), activations_label_);
    memory_form->addRow(tr("Window's boundaries:"), boundaries_label_);
    memory_form->setRowVisible(boundaries_label_, false);
    memory_form->addRow(tr("Output head:"), logits_label_);
    auto* peak_caption = new QLabel(tr("Peak:"), memory_box);
    peak_caption->setFont(bold);
    peak_caption->setToolTip(tr("Reached in a backward pass: not every kind above is held at that moment in full."));
    peak_label_->setToolTip(peak_caption->toolTip());
    memory_form->addRow(peak_caption, peak_label_);
    // The tiers against their budgets: the device, and beyond it host memory and offload_dir's
    // files while offloaded; the verdict over all three.
    offload_tiers_ = new OffloadTiers(memory_form, memory_box);
    left->addWidget(memory_box);
    left->addStretch(1);

    // The explorer: measured rather than planned, one short training session per split.
    explorer_ = new ExplorerBox(this);
    connect(explorer_, &ExplorerBox::recommendationChosen, this, &BatchPanel::applyExploreRow);
    // The critical batch's measurement and a run wait for the explorer: both follow it.
    connect(explorer_, &ExplorerBox::exploringChanged, this, [this](bool exploring) {
        updateControls();
        Q_EMIT exploringChanged(exploring);
    });
    connect(explorer_, &ExplorerBox::explorationFinished, this, &BatchPanel::explorationFinished);

    // Beside the training numbers, under the explorer: decoding's cache, which training never holds.
    auto* right_column = new QWidget(this);
    auto* right = new QVBoxLayout(right_column);
    right->setContentsMargins(0, 0, 0, 0);
    right->setSpacing(10);
    right->addWidget(explorer_, 1);
    inference_cache_ = new InferenceCacheBox(right_column);
    right->addWidget(inference_cache_, 0);
    layout->addWidget(right_column, 1);
}

int64_t BatchPanel::memoryBudgetBytes(const RunConfig& config) {
    if (config.runtime.memory_limit_mb > 0) return config.runtime.memory_limit_mb * kBytesPerMiB;
    return deviceMemoryBytesPerRank(config);
}

void BatchPanel::setRunConfig(const RunConfig& config) {
    config_ = config;
    inference_cache_->setModelConfig(config_.model);  // only a new config changes the model
    chosen_global_batch_ = std::max<int64_t>(config_.globalBatch(), 1);
    showSplit();
    showPlan();
    updateControls();
}

void BatchPanel::setRunLive(bool live) {
    run_live_ = live;
    explorer_->setRunLive(live);
    updateControls();
}

bool BatchPanel::isExploring() const {
    return explorer_->isExploring();
}

void BatchPanel::setExploreStepsPerRow(int64_t steps) {
    explorer_->setStepsPerRow(steps);
}

ExplorerTableModel* BatchPanel::explorerModel() const {
    return explorer_->model();
}

ExplorerChart* BatchPanel::explorerChart() const {
    return explorer_->chart();
}

void BatchPanel::showSplit() {
    critical_batch_->setRunConfig(config_);  // the estimate against the new B
    const TrainConfig& train = config_.train;
    const int64_t world_size = std::max<int64_t>(config_.runtime.world_size, 1);
    {
        const QSignalBlocker block_micro_batch(micro_batch_spin_);
        const QSignalBlocker block_accumulation(accumulation_spin_);
        micro_batch_spin_->setValue(
            static_cast<int>(std::clamp<int64_t>(train.micro_batch_size, 1, kLargestMicroBatch)));
        accumulation_spin_->setValue(
            static_cast<int>(std::clamp<int64_t>(train.gradient_accumulation_steps, 1, kLargestAccumulation)));
    }
    static_cast<DivisorSpinBox*>(micro_batch_spin_)->setDivisorsOf(chosen_global_batch_ / world_size);

    const int64_t global_batch = config_.globalBatch();
    world_size_label_->setText(tr("× W %1").arg(config_.runtime.world_size));
    global_batch_label_->setText(tr("= B %1").arg(global_batch));
    tokens_label_->setText(tr("%1 tokens per step (B %2 × %3 tokens)")
                               .arg(formatGrouped(config_.tokensPerStep()))
                               .arg(global_batch)
                               .arg(formatGrouped(train.seq_len)));
    if (global_batch != chosen_global_batch_) {
        split_hint_label_->setText(
            colored(tr("m %1 does not divide B %2 / W: K %3 makes B %4. An m that divides it restores B %2.")
                        .arg(train.micro_batch_size)
                        .arg(chosen_global_batch_)
                        .arg(train.gradient_accumulation_steps)
                        .arg(global_batch),
                    kNoteColor));
    } else {
        split_hint_label_->setText(
            tr("m's arrows step through the splits of B %1 (K follows); K changes B.").arg(chosen_global_batch_));
    }
}

void BatchPanel::showPlan() {
    // The engine's own rule decides whether Start can work: the session refuses exactly these.
    // One budget for everything shown: runtime.memory_limit_mb wins inside requirePlanFits too.
    budget_bytes_ = memoryBudgetBytes(config_);
    target_ = resolveTarget(config_);
    planned_config_ = config_;
    if (const std::optional<MachineFigures>& figures = machine_probe_->figures();
        figures && target_.kind == TargetKind::Here) {
        planned_config_ = withMachineFigures(config_, target_, figures->probe);
        target_ = resolveTarget(planned_config_);
    }
    start_refusal_.clear();
    try {
        requirePlanFits(config_, budget_bytes_);
    } catch (const ConfigError& refusal) {
        start_refusal_ = QString::fromStdString(refusal.what());
    }
    showPlanNumbers();
    showLayoutChoices();
    Q_EMIT planChanged();
}

void BatchPanel::showLayoutChoices() {
    const QSignalBlocker block_stage(zero_stage_combo_);
    const QSignalBlocker block_recompute(recompute_combo_);
    const QSignalBlocker block_experts(expert_parallel_combo_);
    auto peakWith = [&](int64_t stage, const std::string& recompute, int64_t ep = 0) {
        RunConfig variant = config_;
        variant.runtime.zero_stage = stage;
        variant.runtime.activation_checkpointing = recompute;
        if (ep > 0) variant.runtime.expert_parallel = ep;
        return formatBytes(planOnTarget(variant, target_).peak_bytes);
    };
    // Every EP that divides the routed experts and the ranks, both runtime's (a choice must stay a
    // config this machine validates) and the target's (a dense model: 1 only).
    const ModelConfig& model = config_.model;
    const int64_t W = std::gcd(std::max<int64_t>(config_.runtime.world_size, 1), std::max<int64_t>(target_.devices, 1));
    const int64_t E = model.n_routed_experts;
    const bool moe = E > 0 && model.n_dense_layers < model.n_layers;
    expert_parallel_combo_->clear();
    for (int64_t ep = 1; ep <= (moe ? std::min(W, E) : 1); ++ep)
        if (W % ep == 0 && (ep == 1 || E % ep == 0))
            expert_parallel_combo_->addItem(ep == 1 ? tr("all on every rank · peak %1")
                                                          .arg(peakWith(config_.runtime.zero_stage, config_.runtime.activation_checkpointing, 1))
                                                    : tr("EP %1 · %2 a rank · peak %3")
                                                          .arg(ep)
                                                          .arg(E / ep)
                                                          .arg(peakWith(config_.runtime.zero_stage,
                                                                        config_.runtime.activation_checkpointing, ep)),
                                            qint64(ep));
    expert_parallel_combo_->setCurrentIndex(
        std::max(0, expert_parallel_combo_->findData(qint64(config_.runtime.expert_parallel))));
    expert_parallel_combo_->setEnabled(expert_parallel_combo_->count() > 1 && !run_live_);
    const std::string recompute = config_.runtime.activation_checkpointing;
    zero_stage_combo_->setItemText(0, tr("0: nothing · peak %1").arg(peakWith(0, recompute)));
    zero_stage_combo_->setItemText(1, tr("1: AdamW moments · peak %1").arg(peakWith(1, recompute)));
    zero_stage_combo_->setItemText(2, tr("2: + gradients · peak %1").arg(peakWith(2, recompute)));
    zero_stage_combo_->setItemText(3, tr("3: + weights · peak %1").arg(peakWith(3, recompute)));
    recompute_combo_->setItemText(0, tr("none · peak %1").arg(peakWith(config_.runtime.zero_stage, "none")));
    recompute_combo_->setItemText(1, tr("feed-forward · peak %1").arg(peakWith(config_.runtime.zero_stage, "feedforward")));
    recompute_combo_->setItemText(2, tr("full · peak %1").arg(peakWith(config_.runtime.zero_stage, "full")));
    zero_stage_combo_->setCurrentIndex(std::max(0, zero_stage_combo_->findData(qint64(config_.runtime.zero_stage))));
    recompute_combo_->setCurrentIndex(
        std::max(0, recompute_combo_->findData(QString::fromStdString(config_.runtime.activation_checkpointing))));
    offload_choice_->setRunConfig(config_, target_);
    target_picker_->setRunConfig(config_, target_);
    precision_box_->setRunConfig(config_, target_);
}

void BatchPanel::setCriticalBatch(double sequences, double relative_error, int64_t step) {
    critical_batch_->setEstimate(sequences, relative_error, step);
}

void BatchPanel::setLatestCheckpoint(const QString& path, int64_t step) {
    critical_batch_->setLatestCheckpoint(path, step);
}

bool BatchPanel::isMeasuring() const { return critical_batch_->isMeasuring(); }

bool BatchPanel::measureMachine() {
    return !run_live_ && !isExploring() && machine_probe_->measure();
}

bool BatchPanel::isMeasuringMachine() const { return machine_probe_->isMeasuring(); }

void BatchPanel::setMachineProbeBytes(int64_t bytes) { machine_probe_->setProbeBytes(bytes); }

bool BatchPanel::measureCriticalBatch() {
    if (run_live_ || isExploring() || !critical_batch_->measure()) return false;
    updateControls();
    return true;
}

namespace {

// The undo step of a memory layout (the expert parallelism only where there is any).
QString memoryLayoutDescription(const RunConfig& config) {
    const int64_t stage = config.runtime.zero_stage;
    const QString recompute = QString::fromStdString(config.runtime.activation_checkpointing);
    if (config.runtime.expert_parallel > 1)
        return BatchPanel::tr("Memory layout: ZeRO stage %1, recomputation %2, expert parallelism %3")
            .arg(stage)
            .arg(recompute)
            .arg(config.runtime.expert_parallel);
    return BatchPanel::tr("Memory layout: ZeRO stage %1, recomputation %2").arg(stage).arg(recompute);
}

QString offloadDescription(const QString& offload, const QString& offload_dir) {
    return offload_dir.isEmpty() ? BatchPanel::tr("Offload: %1").arg(offload)
                                 : BatchPanel::tr("Offload: %1 to %2").arg(offload, offload_dir);
}

}  // namespace

void BatchPanel::requestEdit(const RunConfig& before, const QString& description) {
    Q_EMIT configEditRequested(configEditBetween(before, config_, description));
}

void BatchPanel::onMemoryLayoutEdited() {
    const RunConfig before = config_;
    config_.runtime.zero_stage = zero_stage_combo_->currentData().toLongLong();
    config_.runtime.activation_checkpointing = recompute_combo_->currentData().toString().toStdString();
    if (expert_parallel_combo_->currentIndex() >= 0)
        config_.runtime.expert_parallel = expert_parallel_combo_->currentData().toLongLong();
    showPlan();
    // Apply follows: moving off the recommended layout makes it worth a click again.
    updateControls();
    requestEdit(before, memoryLayoutDescription(config_));
}

void BatchPanel::onOffloadEdited(const QString& offload, const QString& offload_dir) {
    const RunConfig before = config_;
    config_.runtime.offload = offload.toStdString();
    config_.runtime.offload_dir = offload_dir.toStdString();
    showPlan();
    updateControls();
    requestEdit(before, offloadDescription(offload, offload_dir));
}

void BatchPanel::onTargetEdited(const TargetConfig& target) {
    const RunConfig before = config_;
    config_.target = target;
    showPlan();
    updateControls();
    requestEdit(before, tr("Target: %1").arg(QString::fromStdString(resolveTarget(config_).label)));
}

void BatchPanel::onPrecisionEdited(const QString& dtype, const QString& optimizer_dtype) {
    const RunConfig before = config_;
    config_.runtime.dtype = dtype.toStdString();
    config_.runtime.optimizer_dtype = optimizer_dtype.toStdString();
    showPlan();
    updateControls();
    requestEdit(before, tr("Precision: %1").arg(precisionName(config_.runtime.dtype, config_.runtime.optimizer_dtype)));
}

bool BatchPanel::applyWhatFits() {
    if (run_live_ || !what_fits_.applies) return false;
    const WhatFitsEdit edit = what_fits_;
    const RunConfig before = config_;
    config_ = edit.config;
    chosen_global_batch_ = std::max<int64_t>(config_.globalBatch(), 1);
    showSplit();
    showPlan();
    updateControls();
    requestEdit(before, edit.description);
    return true;
}

DeviceCountDialog* BatchPanel::showDeviceCounts() {
    if (!device_count_dialog_) device_count_dialog_ = new DeviceCountDialog(this);
    device_count_dialog_->showConfig(planned_config_, published_);  // its "here" rows with the measured rates
    device_count_dialog_->show();
    device_count_dialog_->raise();
    return device_count_dialog_;
}

void BatchPanel::showPlanNumbers() {
    plan_ = planOnTarget(config_, target_);
    advice_ = adviseOnTarget(config_, target_);
    const TargetAdvice& advice = advice_;
    what_fits_ = whatFitsEdit(config_, advice_, target_);
    const RunConfig placed = configOnTarget(config_, target_);
    const bool weights_off = isChoice(config_.runtime.offload, Offload::All) && config_.runtime.zero_stage >= 3;
    // A target of another size than runtime.world_size plans another global batch than the split's.
    const bool other_ranks = placed.runtime.world_size != config_.runtime.world_size;
    target_label_->setText(other_ranks ? tr("%1 (W %2, B %3; the split above: W %4)")
                                             .arg(QString::fromStdString(target_.label))
                                             .arg(placed.runtime.world_size)
                                             .arg(placed.globalBatch())
                                             .arg(config_.runtime.world_size)
                                       : QString::fromStdString(target_.label));
    target_label_->setToolTip(target_.kind == TargetKind::Here
                                  ? tr("target.kind here: this machine as runtime says")
                                  : tr("target.kind %1: a plan only; runtime says where a run trains, and Start "
                                       "checks this machine")
                                        .arg(QString::fromStdString(config_.target.kind)));
    // Offload all: the unit gathered and, on a GPU, the next one arriving (CPU ranks gather from
    // the host tier directly).
    const QString weights = plan_.weight_element_bytes == 2 ? tr("%1 bf16").arg(formatBytes(plan_.weight_bytes))
                                                            : formatBytes(plan_.weight_bytes);
    weights_label_->setText(weights_off ? (target_.gpu ? tr("%1 (two units)") : tr("%1 (one unit)")).arg(weights)
                            : config_.runtime.zero_stage >= 3 ? tr("%1 (1/%2 + one unit)").arg(weights).arg(plan_.world_size)
                            : plan_.weight_element_bytes == 2 ? tr("%1 (bf16)").arg(formatBytes(plan_.weight_bytes))
                                                              : weights);
    weights_label_->setToolTip(plan_.weight_element_bytes == 2
                                   ? tr("The linear layers' weights in bf16 on the device (at ZeRO stage 3 their shards "
                                        "and the units gathered from them), beside the fp32 master in host memory "
                                        "(offload under bf16); the embedding in fp32")
                                   : QString());
    collectives_label_->setText(plan_.world_size > 1 ? tr("%1 sent, %2 calls per step")
                                                           .arg(formatBytes(plan_.bytes_sent_per_step))
                                                           .arg(plan_.collectives_per_step)
                                                     : tr("none on one rank"));
    launch_lines_->showLines(config_, config_file_);
    // The chart predicts the step, and where the window's order changes it (streamed weights,
    // whole blocks recomputed) the other order's too: a second line names both.
    step_chart_->showPlan(placed, plan_, target_);
    const StepTimePlan& time = step_chart_->rows().front().time;
    QString step_text = QString::fromStdString(describeStepTime(time));
    if (const auto& rows = step_chart_->rows(); rows.size() > 1)
        step_text += QLatin1Char('\n') + tr("Window ") + describeWindowOrders(plan_, rows[1].time, rows[1].fits);
    step_time_label_->setText(step_text);
    step_time_label_->setToolTip(describeStepTimeTerms(time, plan_.gradient_accumulation_steps));
    machine_probe_->setPlan(config_, target_, time);
    advice_label_->setText(describeTargetAdvice(advice, config_, target_));
    // The gradients are the buckets' views: only the sync-each mode's running sums add bytes.
    buckets_label_->setText(plan_.bucket_bytes == 0            ? tr("none (gradient views)")
                            : config_.runtime.zero_stage >= 2 ? tr("%1 (in flight)").arg(formatBytes(plan_.bucket_bytes))
                                                              : formatBytes(plan_.bucket_bytes));
    buckets_label_->setToolTip(tr("The gradients are views of the reduction buckets: no second copy. The "
                                  "sync-each mode keeps running sums beside them."));
    // A kind the stage shards says so: "472 KiB (1/2, ZeRO stage 3)".
    auto perRank = [this](int64_t bytes, int64_t sharded_from) {
        return config_.runtime.zero_stage >= sharded_from ? tr("%1 (1/%2, ZeRO stage %3)")
                                                                .arg(formatBytes(bytes))
                                                                .arg(plan_.world_size)
                                                                .arg(config_.runtime.zero_stage)
                                                          : formatBytes(bytes);
    };
    const auto [gradients, why] = OffloadTiers::describeGradients(plan_, perRank(plan_.gradient_bytes, 2));
    gradients_label_->setText(gradients);
    gradients_label_->setToolTip(why);
    optimizer_label_->setText(OffloadTiers::describeMoments(plan_, config_, perRank(plan_.optimizer_bytes, 1)));
    optimizer_label_->setToolTip(!isChoice(config_.runtime.offload, Offload::None)
                                     ? tr("Offloaded (runtime.offload %1): not in the device's peak below.")
                                           .arg(QString::fromStdString(config_.runtime.offload))
                                     : QString());
    activations_label_->setText(formatBytes(plan_.activation_bytes));
    const auto [boundaries, where] = OffloadTiers::describeBoundaries(plan_);
    boundaries_label_->setText(boundaries);
    boundaries_label_->setToolTip(where);
    memory_form_->setRowVisible(boundaries_label_, !boundaries.isEmpty());
    logits_label_->setText(plan_.head_chunk_tokens > 0
                               ? tr("%1 (chunks of %2 tokens)").arg(formatBytes(plan_.logits_bytes)).arg(plan_.head_chunk_tokens)
                               : tr("%1 (whole logits)").arg(formatBytes(plan_.logits_bytes)));
    logits_label_->setToolTip(plan_.head_chunk_tokens > 0
                                  ? tr("runtime.head_chunk_tokens: the head and its loss run over chunks of tokens, the "
                                       "gradients computed chunk by chunk; this is one chunk's logits and the head "
                                       "weight's gradient")
                                  : tr("runtime.head_chunk_tokens 0: the whole micro-batch's logits, their softmax and "
                                       "gradient at the start of the backward"));
    peak_label_->setText(formatBytes(plan_.peak_bytes));
    offload_tiers_->showPlan(plan_, config_, target_, advice);
}

void BatchPanel::setConfigFile(const QString& path) {
    if (path == config_file_) return;
    config_file_ = path;
    showPlanNumbers();
}

void BatchPanel::updateControls() {
    const bool exploring = isExploring();
    // One measurement of this machine at a time, and none beside a run or the explorer: each
    // would measure what the other leaves of the cores.
    critical_batch_->setBlocked(run_live_ || exploring || machine_probe_->isMeasuring());
    machine_probe_->setBlocked(run_live_ || exploring || critical_batch_->isMeasuring());
    micro_batch_spin_->setEnabled(!run_live_);
    accumulation_spin_->setEnabled(!run_live_);
    zero_stage_combo_->setEnabled(!run_live_);
    recompute_combo_->setEnabled(!run_live_);
    expert_parallel_combo_->setEnabled(!run_live_ && expert_parallel_combo_->count() > 1);
    offload_choice_->setRunLive(run_live_);
    target_picker_->setRunLive(run_live_);
    precision_box_->setRunLive(run_live_);
    apply_fit_button_->setEnabled(!run_live_ && what_fits_.applies);
    apply_fit_button_->setToolTip(what_fits_.applies ? what_fits_.description : what_fits_.note);
    // What the user must still do stays in view after the button greys out: the directory.
    const bool placeholder_dir = config_.runtime.offload_dir == kPlannedOffloadDir;
    fit_note_label_->setText(what_fits_.applies ? what_fits_.note
                             : placeholder_dir  ? tr("Applied: the state goes to files. Choose their directory on the "
                                                     "Offload row (runtime.offload_dir reads %1 until then, and Start "
                                                     "refuses it).")
                                                     .arg(QString::fromLatin1(kPlannedOffloadDir))
                                                : QString());
    fit_note_label_->setVisible(!fit_note_label_->text().isEmpty());
    // The explorer's Apply and status follow the shown config.
    explorer_->setRunConfig(config_, budget_bytes_);
}

void BatchPanel::onMicroBatchEdited(int value) {
    const int64_t micro_batch = value;
    const int64_t per_rank = chosen_global_batch_ / std::max<int64_t>(config_.runtime.world_size, 1);
    const int64_t accumulation =
        per_rank % micro_batch == 0
            ? per_rank / micro_batch
            : std::max<int64_t>(1, std::llround(double(per_rank) / double(micro_batch)));
    requestSplit(micro_batch, accumulation);
}

void BatchPanel::onAccumulationEdited(int value) {
    chosen_global_batch_ = config_.train.micro_batch_size * value * std::max<int64_t>(config_.runtime.world_size, 1);
    requestSplit(config_.train.micro_batch_size, value);
}

void BatchPanel::requestSplit(int64_t micro_batch, int64_t accumulation) {
    const RunConfig before = config_;
    config_.train.micro_batch_size = micro_batch;
    config_.train.gradient_accumulation_steps = accumulation;
    if (config_.train.global_batch_size) config_.train.global_batch_size = config_.globalBatch();
    showSplit();
    showPlan();
    updateControls();
    requestEdit(before, tr("Batch split m %1 × K %2").arg(micro_batch).arg(accumulation));
}

bool BatchPanel::explore() {
    return explorer_->explore();
}

void BatchPanel::stopExploring() {
    explorer_->stopExploring();
}

bool BatchPanel::applyRecommendation() {
    return explorer_->applyRecommendation();
}

void BatchPanel::applyExploreRow(const ExploreRow& best) {
    if (best.expert_parallel != config_.runtime.expert_parallel) {
        // The window hears of it as a layout, with the stage in force. The experts' combo shows
        // it first: a stage change below reads the layout back from the combos.
        const RunConfig before = config_;
        config_.runtime.expert_parallel = best.expert_parallel;
        {
            const QSignalBlocker block_experts(expert_parallel_combo_);
            const int index = expert_parallel_combo_->findData(qint64(best.expert_parallel));
            if (index >= 0) expert_parallel_combo_->setCurrentIndex(index);
        }
        requestEdit(before, memoryLayoutDescription(config_));
    }
    if (best.zero_stage != config_.runtime.zero_stage ||
        best.activation_checkpointing != config_.runtime.activation_checkpointing) {
        // Through the combos, as a user's choice: the window hears of it and can undo it.
        const QSignalBlocker block_recompute(recompute_combo_);
        recompute_combo_->setCurrentIndex(
            std::max(0, recompute_combo_->findData(QString::fromStdString(best.activation_checkpointing))));
        zero_stage_combo_->setCurrentIndex(std::max(0, zero_stage_combo_->findData(qint64(best.zero_stage))));
        if (best.zero_stage == config_.runtime.zero_stage) onMemoryLayoutEdited();  // only the recomputation moved
    }
    if (best.offload != config_.runtime.offload) {
        // Offload rows keep the config's directory. The edit is the owner's to apply: the
        // panel's copy is not changed here.
        RunConfig offloaded = config_;
        offloaded.runtime.offload = best.offload;
        if (isChoice(best.offload, Offload::None)) offloaded.runtime.offload_dir.clear();
        Q_EMIT configEditRequested(configEditBetween(
            config_, offloaded,
            offloadDescription(QString::fromStdString(offloaded.runtime.offload),
                               QString::fromStdString(offloaded.runtime.offload_dir))));
    }
    chosen_global_batch_ =
        best.micro_batch_size * best.gradient_accumulation_steps * std::max<int64_t>(config_.runtime.world_size, 1);
    requestSplit(best.micro_batch_size, best.gradient_accumulation_steps);
}

}  // namespace trainbench::gui
