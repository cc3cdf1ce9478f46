// HfExportDialog: where and how a run's checkpoint is written as a Hugging Face directory (folder, dtype, expert layout, shards).
#include "runs/hf_export_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QToolButton>
#include <QVBoxLayout>

#include "trainbench/hf_interop.h"

namespace trainbench::gui {

HfExportDialog::HfExportDialog(const QString& run_label, qint64 step, const QString& suggested_folder, QWidget* parent)
    : QDialog(parent) {
    setObjectName(QStringLiteral("hfExportDialog"));
    setWindowTitle(tr("Export to Hugging Face"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Writes the step-%1 checkpoint of %2 as a Hugging Face model directory "
                                "(config.json, safetensors, the tokenizer), which transformers, vLLM and SGLang load.")
                                 .arg(step)
                                 .arg(run_label),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    auto* folder_row = new QHBoxLayout;
    folder_ = new QLineEdit(suggested_folder, this);
    folder_->setObjectName(QStringLiteral("hfExportFolder"));
    folder_->setToolTip(tr("The directory the export creates; it must not exist yet"));
    folder_->setMinimumWidth(folder_->fontMetrics().averageCharWidth() * 48);
    auto* browse = new QToolButton(this);
    browse->setObjectName(QStringLiteral("hfExportBrowseButton"));
    browse->setText(tr("Browse…"));
    browse->setToolTip(tr("Choose the folder to put it in"));
    connect(browse, &QToolButton::clicked, this, &HfExportDialog::browse);
    folder_row->addWidget(folder_, 1);
    folder_row->addWidget(browse);
    form->addRow(tr("Directory:"), folder_row);

    dtype_ = new QComboBox(this);
    dtype_->setObjectName(QStringLiteral("hfExportDtype"));
    dtype_->addItem(QString::fromLatin1(choiceName(HfWeightDtype::Bf16)));
    dtype_->setItemData(0, tr("Half the size of fp32, as the published checkpoints ship (the router stays fp32)"),
                        Qt::ToolTipRole);
    dtype_->addItem(QString::fromLatin1(choiceName(HfWeightDtype::Fp32)));
    dtype_->setItemData(1, tr("The trained weights bit for bit"), Qt::ToolTipRole);
    form->addRow(tr("Weights:"), dtype_);

    layout_ = new QComboBox(this);
    layout_->setObjectName(QStringLiteral("hfExportLayout"));
    layout_->addItem(QString::fromLatin1(choiceName(HfExpertLayout::PerExpert)));
    layout_->setItemData(0, tr("One tensor per expert and projection: what every transformers release, vLLM and SGLang "
                               "read"),
                         Qt::ToolTipRole);
    layout_->addItem(QString::fromLatin1(choiceName(HfExpertLayout::Fused)));
    layout_->setItemData(1, tr("One tensor per layer and projection pair: transformers 5 and later only"),
                         Qt::ToolTipRole);
    form->addRow(tr("Experts:"), layout_);

    shard_size_ = new QLineEdit(QStringLiteral("5GB"), this);
    shard_size_->setObjectName(QStringLiteral("hfExportShardSize"));
    shard_size_->setToolTip(tr("The most a safetensors file holds: 5GB (10^9 bytes), 500MB, 2GiB (2^30), or bytes"));
    form->addRow(tr("Shard size:"), shard_size_);
    layout->addLayout(form);

    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("hfExportNote"));
    note_->setWordWrap(true);
    note_->setStyleSheet(QStringLiteral("color: #b00020;"));
    layout->addWidget(note_);

    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons_->button(QDialogButtonBox::Ok)->setText(tr("Export"));
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons_);

    connect(folder_, &QLineEdit::textChanged, this, &HfExportDialog::check);
    connect(shard_size_, &QLineEdit::textChanged, this, &HfExportDialog::check);
    check();
}

HfExportParams HfExportDialog::params() const {
    HfExportParams params;
    params.out_dir = QDir::cleanPath(QFileInfo(folder_->text().trimmed()).absoluteFilePath());
    params.dtype = dtype_->currentText();
    params.expert_layout = layout_->currentText();
    params.shard_size = shard_size_->text().trimmed();
    return params;
}

void HfExportDialog::setFolder(const QString& folder) {
    folder_->setText(folder);
}

QString HfExportDialog::freshFolder(const QString& parent, const QString& name) {
    // A run name is free text: what a folder name cannot hold becomes '-'.
    QString base = name;
    base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
    if (base.isEmpty() || base.startsWith(QLatin1Char('.'))) base.prepend(QStringLiteral("run"));
    base += QStringLiteral("-hf");
    const QDir dir(parent);
    QString candidate = dir.filePath(base);
    for (int n = 2; QFileInfo::exists(candidate); ++n) candidate = dir.filePath(QStringLiteral("%1-%2").arg(base).arg(n));
    return candidate;
}

void HfExportDialog::browse() {
    const QFileInfo current(folder_->text().trimmed());
    const QString start = current.absoluteDir().exists() ? current.absolutePath() : QDir::homePath();
    const QString parent = QFileDialog::getExistingDirectory(this, tr("Put the Hugging Face directory in"), start);
    if (parent.isEmpty()) return;
    const QString name = current.fileName().isEmpty() ? QStringLiteral("model-hf") : current.fileName();
    folder_->setText(QDir(parent).filePath(name));
}

void HfExportDialog::check() {
    const QString folder = folder_->text().trimmed();
    QString problem;
    if (folder.isEmpty()) problem = tr("Name the directory to create.");
    else if (QFileInfo::exists(folder)) problem = tr("%1 exists: the export writes a new directory.").arg(folder);
    else if (shard_size_->text().trimmed().isEmpty()) problem = tr("Give a shard size (e.g. 5GB).");
    note_->setText(problem);
    note_->setVisible(!problem.isEmpty());
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(problem.isEmpty());
}

}  // namespace trainbench::gui
