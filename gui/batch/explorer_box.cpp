// ExplorerBox: the explorer's box: every split of the global batch measured, its table, chart and recommendation.
#include "batch/explorer_box.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <QCheckBox>
#include <QColor>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QStringList>
#include <QTableView>
#include <QVBoxLayout>

#include "common/display_format.h"
#include "common/precision_fits.h"
#include "batch/explorer_chart.h"
#include "batch/explorer_table_model.h"
#include "batch/explorer_worker.h"
#include "trainbench/config_io.h"
#include "trainbench/divisors.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

namespace {

const QColor kErrorColor(176, 0, 32);

// The config with its split folded into one micro-batch: equal for any two splits of one
// global batch, so explored rows can be told apart from rows of another config.
// With `layout_free` (an exploration over the memory layouts) the stage and the recomputation
// are normalised away too: applying its recommendation keeps its rows current.
std::string splitFreeKey(RunConfig config, bool layout_free) {
    if (layout_free) {
        config.runtime.zero_stage = 0;
        config.runtime.activation_checkpointing = "none";
    }
    const int64_t world_size = std::max<int64_t>(config.runtime.world_size, 1);
    config.train.micro_batch_size = config.globalBatch() / world_size;
    config.train.gradient_accumulation_steps = 1;
    config.train.global_batch_size.reset();
    return runConfigToJson(config, /*indent=*/-1);
}

int64_t perRankBatch(const RunConfig& config) {
    return config.globalBatch() / std::max<int64_t>(config.runtime.world_size, 1);
}

}  // namespace

ExplorerBox::ExplorerBox(QWidget* parent)
    : QGroupBox(tr("Explorer: every split of the global batch, measured"), parent) {
    worker_ = new ExplorerWorker(this);
    model_ = new ExplorerTableModel(this);
    buildUi();

    connect(worker_, &ExplorerWorker::rowExplored, this, &ExplorerBox::onRowExplored);
    connect(worker_, &ExplorerWorker::finished, this, &ExplorerBox::onExploreFinished);
    connect(worker_, &ExplorerWorker::failed, this, &ExplorerBox::onExploreFailed);
}

ExplorerBox::~ExplorerBox() {
    // First of all: the exploring thread's last reports must not meet half-destroyed widgets.
    delete worker_;
}

void ExplorerBox::buildUi() {
    auto* layout = new QVBoxLayout(this);
    auto* buttons = new QHBoxLayout;
    explore_button_ = new QPushButton(tr("Explore"), this);
    explore_button_->setObjectName(QStringLiteral("exploreButton"));
    stop_button_ = new QPushButton(tr("Stop"), this);
    stop_button_->setObjectName(QStringLiteral("stopExploreButton"));
    apply_button_ = new QPushButton(tr("Apply recommendation"), this);
    apply_button_->setObjectName(QStringLiteral("applyRecommendationButton"));
    layouts_check_ = new QCheckBox(tr("over memory layouts"), this);
    layouts_check_->setObjectName(QStringLiteral("exploreLayoutsCheck"));
    layouts_check_->setToolTip(tr("Also measure every ZeRO stage and recomputation mode, at the splits the "
                                  "planner puts within the budget"));
    buttons->addWidget(explore_button_);
    buttons->addWidget(stop_button_);
    buttons->addWidget(layouts_check_);
    buttons->addStretch(1);
    buttons->addWidget(apply_button_);
    layout->addLayout(buttons);
    status_label_ = new QLabel(this);
    status_label_->setObjectName(QStringLiteral("explorerStatusLabel"));
    status_label_->setWordWrap(true);
    status_label_->setMinimumHeight(status_label_->fontMetrics().lineSpacing() * 2);
    status_label_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    layout->addWidget(status_label_);
    precision_label_ = new QLabel(this);
    precision_label_->setObjectName(QStringLiteral("explorerPrecisionLabel"));
    precision_label_->setWordWrap(true);
    layout->addWidget(precision_label_);

    table_ = new QTableView(this);
    table_->setObjectName(QStringLiteral("explorerTable"));
    table_->setModel(model_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setAlternatingRowColors(true);
    table_->verticalHeader()->setVisible(false);
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().lineSpacing() + 8);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    // Room for the usual handful of splits (B = 16: five) without a scroll bar.
    table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() +
                             6 * table_->verticalHeader()->defaultSectionSize() + 4);
    layout->addWidget(table_, 0);

    chart_ = new ExplorerChart(this);
    layout->addWidget(chart_, 1);

    connect(explore_button_, &QPushButton::clicked, this, &ExplorerBox::explore);
    connect(stop_button_, &QPushButton::clicked, this, &ExplorerBox::stopExploring);
    connect(apply_button_, &QPushButton::clicked, this, &ExplorerBox::applyRecommendation);
}

void ExplorerBox::setRunConfig(const RunConfig& config, int64_t budget_bytes) {
    config_ = config;
    budget_bytes_ = budget_bytes;
    // Until something is measured the chart shows which splits Explore would measure; only a
    // new B or W changes them.
    const int64_t per_rank = perRankBatch(config_);
    if (!isExploring() && model_->rowCount() == 0 && per_rank != previewed_per_rank_) {
        chart_->resetSplits(divisorsOf(per_rank));
        previewed_per_rank_ = per_rank;
    }
    showPrecisions();
    updateControls();
}

void ExplorerBox::showPrecisions() {
    const PrecisionFits fits = precisionFits(config_, budget_bytes_);
    const PrecisionFit* own = fits.currentFit();
    const QString measured = fits.auto_dtype && own ? tr("auto (%1 here)").arg(QString::fromStdString(own->dtype))
                                                    : QString::fromStdString(config_.runtime.dtype);
    QStringList each;
    for (const PrecisionFit& fit : fits.rows)
        each << (fits.budget ? tr("%1 %2").arg(precisionName(fit), largestMicroBatchText(fit, true))
                             : tr("%1 %2").arg(precisionName(fit), formatBytes(fit.plan.peak_bytes)));
    const bool none_fits = fits.budget && std::all_of(fits.rows.begin(), fits.rows.end(), [](const PrecisionFit& fit) {
                               return fit.largest_micro_batch <= 0;
                           });
    precision_label_->setText(none_fits    ? tr("Measured in %1. The planner fits no m here in any precision.").arg(measured)
                              : fits.budget ? tr("Measured in %1. The planner's largest m here: %2.").arg(measured, each.join(tr(", ")))
                                          : tr("Measured in %1. The planner's peaks at m %2 here: %3.")
                                                .arg(measured)
                                                .arg(own ? own->plan.micro_batch_size : config_.train.micro_batch_size)
                                                .arg(each.join(tr(", "))));
    precision_label_->setToolTip(describePrecisionFits(fits, tr("this machine")) +
                                 tr("\n\nThe explorer measures runtime.dtype only; the Precision box sets another."));
}

void ExplorerBox::setRunLive(bool live) {
    run_live_ = live;
    updateControls();
}

bool ExplorerBox::isExploring() const {
    return worker_->isRunning();
}

void ExplorerBox::updateControls() {
    const bool exploring = isExploring();
    explore_button_->setEnabled(!run_live_ && !exploring);
    explore_button_->setToolTip(run_live_ ? tr("A run is live: explore when it has ended.")
                                          : tr("Train each split of B %1 for %2 steps and measure it.")
                                                .arg(config_.globalBatch())
                                                .arg(steps_per_row_));
    stop_button_->setEnabled(exploring && !stop_requested_);

    const int recommended = model_->recommended();
    bool can_apply = !run_live_ && !exploring && have_result_ && recommended >= 0 && resultsMatchConfig();
    if (can_apply) {
        const ExploreRow& best = model_->rows()[static_cast<size_t>(recommended)];
        // Already in force: a click would change nothing.
        can_apply = best.micro_batch_size != config_.train.micro_batch_size ||
                    best.gradient_accumulation_steps != config_.train.gradient_accumulation_steps ||
                    best.zero_stage != config_.runtime.zero_stage ||
                    best.expert_parallel != config_.runtime.expert_parallel ||
                    best.activation_checkpointing != config_.runtime.activation_checkpointing;
        apply_button_->setToolTip(
            tr("Set m %1 × K %2").arg(best.micro_batch_size).arg(best.gradient_accumulation_steps));
    } else {
        apply_button_->setToolTip(QString());
    }
    apply_button_->setEnabled(can_apply);

    if (!exploring && !have_result_ && model_->rowCount() == 0) {
        QString status = tr("Explore trains each of the %1 splits of B %2 for %3 steps and measures its "
                            "speed and peak memory.")
                             .arg(divisorsOf(perRankBatch(config_)).size())
                             .arg(config_.globalBatch())
                             .arg(steps_per_row_);
        // The plan is the target's; what the explorer measures is this machine.
        if (!isChoice(config_.target.kind, TargetKind::Here))
            status += tr(" It measures this machine (runtime: %1, %2 rank(s)), not the target the plan is for.")
                          .arg(QString::fromStdString(config_.runtime.device))
                          .arg(config_.runtime.world_size);
        setStatus(status);
    } else if (!exploring && have_result_) {
        if (resultsMatchConfig()) setStatus(result_status_, result_is_error_);
        else setStatus(tr("These rows were measured for another global batch or config: explore again."));
    }
}

void ExplorerBox::setStatus(const QString& text, bool error) {
    status_label_->setText(text);
    status_label_->setStyleSheet(error ? QStringLiteral("color: %1;").arg(kErrorColor.name()) : QString());
}

bool ExplorerBox::explore() {
    if (run_live_ || isExploring()) return false;
    const int64_t per_rank = perRankBatch(config_);
    const std::vector<int64_t> splits = divisorsOf(per_rank);
    ExploreParams params;
    params.config = config_;
    params.limit_bytes = budget_bytes_;
    params.steps_per_row = steps_per_row_;
    params.over_layouts = layouts_check_->isChecked();
    const std::vector<MemoryLayout> rows = explorationRows(config_, params.limit_bytes, params.over_layouts);
    if (rows.empty()) {
        setStatus(tr("No layout and split is planned within the budget: nothing to measure."), true);
        return false;
    }

    model_->clear();
    chart_->resetSplits(splits);
    chart_->setBudget(params.limit_bytes);
    previewed_per_rank_ = per_rank;
    expected_rows_ = static_cast<int64_t>(rows.size());
    explored_over_layouts_ = params.over_layouts;
    explored_key_ = splitFreeKey(config_, explored_over_layouts_);
    have_result_ = false;
    stop_requested_ = false;
    if (!worker_->start(std::move(params))) return false;
    setStatus(explored_over_layouts_ ? tr("Measuring stage %1 · %2, m %3 (1 of %4)…")
                                           .arg(rows.front().zero_stage)
                                           .arg(QString::fromStdString(rows.front().activation_checkpointing))
                                           .arg(rows.front().micro_batch_size)
                                           .arg(expected_rows_)
                                     : tr("Measuring m %1 (1 of %2)…").arg(rows.front().micro_batch_size).arg(expected_rows_));
    updateControls();
    Q_EMIT exploringChanged(true);
    return true;
}

void ExplorerBox::stopExploring() {
    if (!isExploring()) return;
    worker_->cancel();
    stop_requested_ = true;
    stop_button_->setEnabled(false);
    setStatus(tr("Stopping after the split being measured…"));
}

bool ExplorerBox::applyRecommendation() {
    const int recommended = model_->recommended();
    if (run_live_ || isExploring() || !have_result_ || recommended < 0 || !resultsMatchConfig()) return false;
    const ExploreRow best = model_->rows()[static_cast<size_t>(recommended)];
    // The owner applies it and shows the new config (setRunConfig) before the status says so.
    Q_EMIT recommendationChosen(best);
    result_status_ = tr("Applied the recommendation: m %1 × K %2, %3 tokens/s when measured.")
                         .arg(best.micro_batch_size)
                         .arg(best.gradient_accumulation_steps)
                         .arg(formatGrouped(std::llround(best.tokens_per_s)));
    if (explored_over_layouts_)
        result_status_ += tr(" Layout: ZeRO stage %1, recompute %2, offload %3.")
                              .arg(best.zero_stage)
                              .arg(QString::fromStdString(best.activation_checkpointing), QString::fromStdString(best.offload));
    result_is_error_ = false;
    setStatus(result_status_);
    return true;
}

void ExplorerBox::onRowExplored(const ExploreRow& row) {
    model_->appendRow(row);
    chart_->addRow(row);
    const int64_t measured = model_->rowCount();
    if (measured < expected_rows_ && worker_->isRunning() && !stop_requested_)
        setStatus(tr("Measured %1 of %2 splits; measuring the next…").arg(measured).arg(expected_rows_));
}

void ExplorerBox::onExploreFinished(const ExploreResult& result, bool cancelled) {
    // Every row was queued before the result, so the model already holds them; a mismatch
    // would mean a lost report, and the result is the authority.
    if (model_->rows().size() != result.rows.size()) {
        model_->clear();
        chart_->resetSplits({});
        for (const ExploreRow& row : result.rows) {
            model_->appendRow(row);
            chart_->addRow(row);
        }
    }
    model_->setRecommended(result.recommended);
    chart_->setRecommended(result.recommended);
    have_result_ = true;

    const QString head = cancelled && static_cast<int64_t>(result.rows.size()) < expected_rows_
                             ? tr("Stopped after %1 of %2 splits. ").arg(result.rows.size()).arg(expected_rows_)
                             : QString();
    result_is_error_ = false;
    if (result.recommended >= 0) {
        const ExploreRow& best = result.rows[static_cast<size_t>(result.recommended)];
        result_status_ = head + tr("Recommended: m %1 × K %2, %3 tokens/s at a measured peak of %4 "
                                    "(the fastest split that keeps %5 % of the budget free).")
                                     .arg(best.micro_batch_size)
                                     .arg(best.gradient_accumulation_steps)
                                     .arg(formatGrouped(std::llround(best.tokens_per_s)))
                                     .arg(formatBytes(best.measured_peak_bytes))
                                     .arg(std::lround(100.0 * result.safety_margin));
        // Marked by the model (bold on green); a selection's highlight would paint over that.
        table_->scrollTo(model_->index(result.recommended, 0));
    } else if (result.rows.empty()) {
        result_status_ = head + tr("No split was measured.");
    } else {
        result_status_ = head + tr("No split fits the budget with %1 % of it to spare: shorten train.seq_len, "
                                   "use a smaller model or raise runtime.memory_limit_mb.")
                                    .arg(std::lround(100.0 * result.safety_margin));
        result_is_error_ = true;
    }
    // updateControls shows result_status_ while the rows match the config.
    updateControls();
    Q_EMIT exploringChanged(false);
    Q_EMIT explorationFinished();
}

void ExplorerBox::onExploreFailed(const QString& message) {
    have_result_ = true;
    result_status_ = tr("Could not explore: %1").arg(message);
    result_is_error_ = true;
    updateControls();
    Q_EMIT exploringChanged(false);
    Q_EMIT explorationFinished();
}

bool ExplorerBox::resultsMatchConfig() const {
    return !explored_key_.empty() && explored_key_ == splitFreeKey(config_, explored_over_layouts_);
}

}  // namespace trainbench::gui
