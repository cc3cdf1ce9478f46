// ConfigBox: the side panel's read-only numbers of the config shown (parameters, batch, steps, schedule, device).
#include "common/value_label.h"
#include "app/config_box.h"

#include <QFormLayout>
#include <QLabel>

#include "app/config_summary.h"

namespace trainbench::gui {

namespace {


}  // namespace

ConfigBox::ConfigBox(QWidget* parent) : QGroupBox(tr("Config"), parent) {
    setObjectName(QStringLiteral("configBox"));
    auto* form = new QFormLayout(this);
    form_ = form;
    form->setLabelAlignment(Qt::AlignRight);
    form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setVerticalSpacing(5);
    name_label_ = valueLabel(QStringLiteral("configNameLabel"), this);
    total_params_label_ = valueLabel(QStringLiteral("totalParamsLabel"), this);
    activated_params_label_ = valueLabel(QStringLiteral("activatedParamsLabel"), this);
    model_shape_label_ = valueLabel(QStringLiteral("modelShapeLabel"), this);
    batch_label_ = valueLabel(QStringLiteral("batchLabel"), this);
    tokens_per_step_label_ = valueLabel(QStringLiteral("tokensPerStepLabel"), this);
    seq_len_label_ = valueLabel(QStringLiteral("seqLenLabel"), this);
    steps_label_ = valueLabel(QStringLiteral("stepsLabel"), this);
    lr_label_ = valueLabel(QStringLiteral("lrLabel"), this);
    schedule_label_ = valueLabel(QStringLiteral("scheduleLabel"), this);
    device_label_ = valueLabel(QStringLiteral("deviceLabel"), this);
    target_label_ = valueLabel(QStringLiteral("targetLabel"), this);
    target_label_->setToolTip(tr("target: the machine the Batch & memory tab plans for; runtime says where a run trains"));
    // The two numbers that decide cost stand out.
    QFont emphasis = batch_label_->font();
    emphasis.setBold(true);
    batch_label_->setFont(emphasis);
    total_params_label_->setFont(emphasis);
    form->addRow(tr("File:"), name_label_);
    form->addRow(tr("Parameters:"), total_params_label_);
    form->addRow(tr("Activated:"), activated_params_label_);
    form->addRow(tr("Model:"), model_shape_label_);
    form->addRow(tr("Batch:"), batch_label_);
    form->addRow(tr("Tokens / step:"), tokens_per_step_label_);
    form->addRow(tr("Sequence length:"), seq_len_label_);
    form->addRow(tr("Steps:"), steps_label_);
    form->addRow(tr("Learning rate:"), lr_label_);
    form->addRow(tr("Schedule:"), schedule_label_);
    form->addRow(tr("Device:"), device_label_);
    form->addRow(tr("Planned for:"), target_label_);
}

void ConfigBox::showConfig(const RunConfig& config, const QString& origin, bool watched) {
    setTitle(watched ? tr("Config of the watched run") : tr("Config"));
    const ConfigSummary summary = summarizeConfig(config);
    name_label_->setText(origin);
    total_params_label_->setText(summary.total_params);
    activated_params_label_->setText(tr("%1 per token").arg(summary.activated_params));
    model_shape_label_->setText(summary.model_shape);
    batch_label_->setText(summary.batch_equation);
    tokens_per_step_label_->setText(summary.tokens_per_step);
    seq_len_label_->setText(summary.seq_len);
    steps_label_->setText(summary.steps);
    lr_label_->setText(summary.learning_rate);
    schedule_label_->setText(summary.schedule);
    device_label_->setText(summary.device);
    target_label_->setText(summary.target);
    form_->setRowVisible(target_label_, !summary.target.isEmpty());
}

}  // namespace trainbench::gui
