// InferenceCacheBox: the batch panel's line on decoding's attention cache (generate, samples), in both forms of MLA.
#include "batch/inference_cache_box.h"

#include <QGridLayout>
#include <QLabel>

#include "common/display_format.h"
#include "common/value_label.h"

namespace trainbench::gui {

namespace {

// A number of the table: right-aligned under its column's header.
QLabel* numberLabel(const QString& object_name, QWidget* parent) {
    QLabel* label = valueLabel(object_name, parent);
    label->setWordWrap(false);
    label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return label;
}

}  // namespace

InferenceCacheBox::InferenceCacheBox(QWidget* parent) : QGroupBox(tr("Decoding cache (generate, samples)"), parent) {
    setObjectName(QStringLiteral("inferenceCacheBox"));
    // Children without a tooltip of their own show the box's.
    setToolTip(tr("The attention cache of decoding (trainbench-cli generate, and the samples a run writes with "
                  "train.sample_every), allocated whole: model.max_batch_size rows of model.max_seq_len positions in "
                  "every layer.\nIt is not training memory: the plan per rank never counts it.\nmodel.max_batch_size "
                  "is the cache's rows, not the training micro-batch (train.micro_batch_size, m)."));
    auto* grid = new QGridLayout(this);
    grid->setHorizontalSpacing(14);
    grid->setVerticalSpacing(3);
    grid->setColumnStretch(0, 1);

    shape_label_ = valueLabel(QStringLiteral("inferenceCacheShapeLabel"), this);
    grid->addWidget(shape_label_, 0, 0, 1, 3);

    auto* per_token_header = new QLabel(tr("per token"), this);
    per_token_header->setAlignment(Qt::AlignRight | Qt::AlignBottom);
    total_header_ = new QLabel(this);
    total_header_->setAlignment(Qt::AlignRight | Qt::AlignBottom);
    QFont bold = per_token_header->font();
    bold.setBold(true);
    per_token_header->setFont(bold);
    total_header_->setFont(bold);
    grid->addWidget(per_token_header, 1, 1);
    grid->addWidget(total_header_, 1, 2);

    auto* naive_caption = new QLabel(tr("<b>naive</b> (per-head keys and values, what the k_cache formula counts)"), this);
    naive_caption->setWordWrap(true);
    naive_caption->setToolTip(tr("Each head's key (qk_nope_head_dim + qk_rope_head_dim) and value (v_head_dim) for every "
                                 "token and layer: n_layers × n_heads × (qk_nope + qk_rope + v) × 2 bytes. What the "
                                 "guides' k_cache / v_cache formula counts; `generate --cache naive`."));
    naive_per_token_ = numberLabel(QStringLiteral("inferenceNaivePerTokenLabel"), this);
    naive_total_ = numberLabel(QStringLiteral("inferenceNaiveTotalLabel"), this);
    for (QLabel* label : {naive_per_token_, naive_total_}) label->setToolTip(naive_caption->toolTip());
    grid->addWidget(naive_caption, 2, 0);
    grid->addWidget(naive_per_token_, 2, 1);
    grid->addWidget(naive_total_, 2, 2);

    auto* absorbed_caption = new QLabel(tr("<b>absorbed</b> (latent + shared rotary key, what MLA needs)"), this);
    absorbed_caption->setWordWrap(true);
    absorbed_caption->setToolTip(tr("The compressed latent (kv_lora_rank) and the one rotary key all heads share "
                                    "(qk_rope_head_dim) for every token and layer: n_layers × (kv_lora_rank + qk_rope) × "
                                    "2 bytes, whatever the heads. The reference's absorb mode and generate's default."));
    absorbed_per_token_ = numberLabel(QStringLiteral("inferenceAbsorbedPerTokenLabel"), this);
    absorbed_total_ = numberLabel(QStringLiteral("inferenceAbsorbedTotalLabel"), this);
    for (QLabel* label : {absorbed_per_token_, absorbed_total_}) label->setToolTip(absorbed_caption->toolTip());
    grid->addWidget(absorbed_caption, 3, 0);
    grid->addWidget(absorbed_per_token_, 3, 1);
    grid->addWidget(absorbed_total_, 3, 2);

    auto* note = new QLabel(tr("Decoding's cache, not training memory; max_batch_size is not the micro-batch. "
                               "trainbench's generate keeps it in fp32: twice these."),
                            this);
    note->setObjectName(QStringLiteral("inferenceCacheNoteLabel"));
    note->setWordWrap(true);
    note->setForegroundRole(QPalette::PlaceholderText);
    grid->addWidget(note, 4, 0, 1, 3);
}

void InferenceCacheBox::setModelConfig(const ModelConfig& model) {
    // bf16, as the reference keeps the cache (and as `trainbench-cli plan` prints it).
    plan_ = planInferenceCache(model, /*element_bytes=*/2);
    shape_label_->setText(tr("max_batch_size %1 rows × max_seq_len %2 positions × %3 layers, at bf16")
                              .arg(formatGrouped(plan_.rows))
                              .arg(formatGrouped(plan_.positions))
                              .arg(plan_.layers));
    total_header_->setText(tr("in all (%1 × %2)").arg(formatGrouped(plan_.rows)).arg(formatGrouped(plan_.positions)));
    naive_per_token_->setText(formatBytes(plan_.naive_bytes_per_token));
    naive_total_->setText(formatBytes(plan_.naive_bytes));
    absorbed_per_token_->setText(formatBytes(plan_.absorbed_bytes_per_token));
    absorbed_total_->setText(formatBytes(plan_.absorbed_bytes));
}

}  // namespace trainbench::gui
