// PrecisionBox: the batch panel's precision table: each precision's planned peak and largest fitting m, the config's own checked, each one click away.
#include "batch/precision_box.h"

#include <algorithm>
#include <initializer_list>

#include <QButtonGroup>
#include <QGridLayout>
#include <QLabel>
#include <QRadioButton>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "common/display_format.h"

namespace trainbench::gui {

namespace {

const QColor kChangeColor(90, 90, 90);
const QColor kNoteColor(150, 95, 0);

QLabel* cell(const QString& object_name, Qt::Alignment alignment, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(object_name);
    label->setAlignment(alignment | Qt::AlignVCenter);
    return label;
}

}  // namespace

PrecisionBox::PrecisionBox(QWidget* parent) : QGroupBox(tr("Precision"), parent) {
    setObjectName(QStringLiteral("precisionBox"));
    setToolTip(tr("runtime.dtype and runtime.optimizer_dtype: fp8 keeps the activations the backward needs in fp8 "
                  "(DeepSeek-V3's recipe), bf16 moments halve AdamW's bytes; master weights and gradients stay fp32."));
    auto* layout = new QVBoxLayout(this);
    auto* grid = new QGridLayout;
    grid->setHorizontalSpacing(6);
    grid->setVerticalSpacing(2);
    auto* peak_header = cell(QStringLiteral("precisionPeakHeader"), Qt::AlignRight, this);
    peak_header->setText(tr("peak"));
    // Over the m and its change: the numbers right-aligned under its start.
    largest_header_ = cell(QStringLiteral("precisionLargestHeader"), Qt::AlignLeft, this);
    largest_header_->setText(tr("largest m"));
    QFont header_font = peak_header->font();
    header_font.setItalic(true);
    peak_header->setFont(header_font);
    largest_header_->setFont(header_font);
    grid->addWidget(peak_header, 0, 1);
    grid->addWidget(largest_header_, 0, 2, 1, 2);
    group_ = new QButtonGroup(this);
    group_->setExclusive(true);
    for (int i = 0; i < kRows; ++i) {
        Row& row = rows_[size_t(i)];
        const QString n = QString::number(i);
        row.choice = new QRadioButton(this);
        row.choice->setObjectName(QStringLiteral("precisionChoice") + n);
        group_->addButton(row.choice, i);
        row.peak = cell(QStringLiteral("precisionPeak") + n, Qt::AlignRight, this);
        row.largest = cell(QStringLiteral("precisionLargest") + n, Qt::AlignRight, this);
        row.change = cell(QStringLiteral("precisionChange") + n, Qt::AlignLeft, this);
        row.change->setStyleSheet(QStringLiteral("color: %1;").arg(kChangeColor.name()));
        connect(row.choice, &QRadioButton::clicked, this, [this, i] {
            if (!choose(i)) showCurrent();
        });
        grid->addWidget(row.choice, i + 1, 0);
        grid->addWidget(row.peak, i + 1, 1);
        grid->addWidget(row.largest, i + 1, 2);
        grid->addWidget(row.change, i + 1, 3);
    }
    // The names take what is left; the numbers stay beside them.
    grid->setColumnStretch(0, 1);
    layout->addLayout(grid);
    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("precisionNoteLabel"));
    note_->setWordWrap(true);
    layout->addWidget(note_);
}

void PrecisionBox::setRunConfig(const RunConfig& config, const TargetMachine& target) {
    config_ = config;
    fits_ = precisionFitsOnTarget(config_, target);
    const PrecisionFit* own = fits_.currentFit();
    for (int i = 0; i < kRows; ++i) {
        Row& row = rows_[size_t(i)];
        const bool shown = size_t(i) < fits_.rows.size();
        for (QWidget* widget : std::initializer_list<QWidget*>{row.choice, row.peak, row.largest, row.change})
            widget->setVisible(shown);
        if (!shown) continue;
        const PrecisionFit& fit = fits_.rows[size_t(i)];
        const bool current = i == fits_.current;
        row.choice->setText(current && fits_.auto_dtype ? tr("%1 (auto)").arg(precisionName(fit)) : precisionName(fit));
        row.peak->setText(formatBytes(fit.plan.peak_bytes));
        row.largest->setText(largestMicroBatchText(fit, fits_.budget));
        row.change->setText(current || !own ? QString() : largestMicroBatchChange(fit, *own, fits_.budget));
        QFont font = row.peak->font();
        font.setBold(current);
        row.choice->setFont(font);
        row.peak->setFont(font);
        row.largest->setFont(font);
        const QString line = describePrecisionFit(fit, fits_.budget);
        row.choice->setToolTip(current ? tr("The config's precision: %1").arg(line)
                                       : tr("%1. Click to set runtime.dtype %2 and runtime.optimizer_dtype %3 (one "
                                            "undoable edit).")
                                             .arg(line, QString::fromStdString(fit.dtype),
                                                  QString::fromStdString(fit.optimizer_dtype)));
        row.peak->setToolTip(tr("At m %1: weights %2, gradients %3, AdamW moments %4, activations %5, output head %6")
                                 .arg(fit.plan.micro_batch_size)
                                 .arg(formatBytes(fit.plan.weight_bytes), formatBytes(fit.plan.gradient_bytes),
                                      formatBytes(fit.plan.optimizer_bytes), formatBytes(fit.plan.activation_bytes),
                                      formatBytes(fit.plan.logits_bytes)));
        row.largest->setToolTip(line);
        row.change->setToolTip(own && !current ? tr("Largest m against %1's (%2)")
                                                     .arg(precisionName(*own), largestMicroBatchText(*own, fits_.budget))
                                               : QString());
    }
    const int64_t m = own ? own->plan.micro_batch_size : config_.train.micro_batch_size;
    const int64_t per_rank = own ? own->plan.global_batch_size / std::max<int64_t>(own->plan.world_size, 1) : 0;
    const bool none_fits = fits_.budget && std::all_of(fits_.rows.begin(), fits_.rows.end(),
                                                      [](const PrecisionFit& fit) { return fit.largest_micro_batch <= 0; });
    if (none_fits) {
        note_->setText(tr("Peak at m %1. No precision fits m 1 in a device's %2 at this layout: the layout above "
                          "decides first (Apply what fits).")
                           .arg(m)
                           .arg(formatBytes(fits_.limit_bytes)));
        note_->setStyleSheet(QStringLiteral("color: %1;").arg(kNoteColor.name()));
    } else if (fits_.budget) {
        note_->setText(tr("Peak at m %1. Largest m: the largest dividing B / W = %2 that fits a device's %3.")
                           .arg(m)
                           .arg(per_rank)
                           .arg(formatBytes(fits_.limit_bytes)));
        note_->setStyleSheet(QString());
    } else {
        note_->setText(tr("No device budget known: the peaks at m %1 compare. runtime.memory_limit_mb or a target "
                          "gives the largest m.")
                           .arg(m));
        note_->setStyleSheet(QStringLiteral("color: %1;").arg(kNoteColor.name()));
    }
    largest_header_->setToolTip(note_->text());
    showCurrent();
    updateControls();
}

void PrecisionBox::setRunLive(bool live) {
    run_live_ = live;
    updateControls();
}

void PrecisionBox::showCurrent() {
    const QSignalBlocker block(group_);
    if (QAbstractButton* own = group_->button(fits_.current)) own->setChecked(true);
}

void PrecisionBox::updateControls() {
    for (const Row& row : rows_) row.choice->setEnabled(!run_live_);
}

bool PrecisionBox::choose(int row) {
    if (run_live_ || row < 0 || size_t(row) >= fits_.rows.size() || row == fits_.current) return false;
    const PrecisionFit& fit = fits_.rows[size_t(row)];
    Q_EMIT precisionRequested(QString::fromStdString(fit.dtype), QString::fromStdString(fit.optimizer_dtype));
    return true;
}

}  // namespace trainbench::gui
