#include "batch/launch_lines_view.h"

#include <QClipboard>
#include <QGuiApplication>
#include <QLabel>
#include <QPushButton>
#include <QStringList>
#include <QVBoxLayout>

namespace trainbench::gui {
namespace {

// The command lines alone, one a line, for the clipboard.
QString commandsOf(const LaunchLines& lines) {
    QStringList commands{QString::fromStdString(lines.torchrun)};
    if (!lines.torchrun_two_nodes.empty()) commands << QString::fromStdString(lines.torchrun_two_nodes);
    commands << QString::fromStdString(lines.srun);
    return commands.join(QLatin1Char('\n'));
}

QString describe(const LaunchLines& lines) {
    const QString ranks = QString::fromStdString(lines.ranks);
    if (lines.torchrun.empty()) return ranks;
    QString text = QObject::tr("%1. As processes, one per rank:").arg(ranks.left(1).toUpper() + ranks.mid(1));
    text += QLatin1Char('\n') + QString::fromStdString(lines.torchrun);
    if (!lines.torchrun_two_nodes.empty())
        text += QLatin1Char('\n') + QObject::tr("On two machines: ") + QString::fromStdString(lines.torchrun_two_nodes);
    text += QLatin1Char('\n') + QObject::tr("Under Slurm (sbatch):") + QLatin1Char('\n') + QString::fromStdString(lines.srun);
    return text;
}

}  // namespace

LaunchLinesView::LaunchLinesView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    label_ = new QLabel(this);
    label_->setObjectName(QStringLiteral("launchLabel"));
    label_->setWordWrap(true);
    label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label_->setToolTip(tr("Start runs the ranks as threads of this process; a launcher starts one process per "
                          "rank (on the CPU they meet through Gloo, on GPUs through NCCL) and rank 0 records "
                          "the run in the store, where it can be watched like any other"));
    copy_button_ = new QPushButton(tr("Copy the command lines"), this);
    copy_button_->setObjectName(QStringLiteral("copyLaunchButton"));
    connect(copy_button_, &QPushButton::clicked, this,
            [this] { QGuiApplication::clipboard()->setText(commandsOf(lines_)); });
    layout->addWidget(label_);
    layout->addWidget(copy_button_, 0, Qt::AlignLeft);
}

void LaunchLinesView::showLines(const RunConfig& config, const QString& config_file) {
    lines_ = launchLines(config, config_file.isEmpty() ? "config.json" : config_file.toStdString());
    const bool several = !lines_.torchrun.empty();
    label_->setText(describe(lines_) + (config_file.isEmpty() && several
                                            ? QLatin1Char('\n') + tr("(config.json: the config saved with File › Save "
                                                                     "config as…)")
                                            : QString()));
    copy_button_->setVisible(several);
}

}  // namespace trainbench::gui
