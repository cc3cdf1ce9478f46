// OffloadChoice: the Memory layout box's "Offload:" row: where each rank's AdamW moments (and under "all" its weights' shard) live between steps (runtime.offload, runtime.offload_dir).
#include "batch/offload_choice.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QToolButton>
#include <QVBoxLayout>

#include "common/display_format.h"
#include "trainbench/config_io.h"
#include "trainbench/memory_plan.h"

namespace trainbench::gui {

namespace {

const QColor kNoteColor(150, 95, 0);
const QString kOffloadNone = QString::fromLatin1(choiceName(Offload::None));
const QString kOffloadOptimizer = QString::fromLatin1(choiceName(Offload::Optimizer));
const QString kOffloadAll = QString::fromLatin1(choiceName(Offload::All));

bool onDisk(OffloadChoice::Target target) { return target == OffloadChoice::Disk || target == OffloadChoice::AllDisk; }
bool offloadsAll(OffloadChoice::Target target) {
    return target == OffloadChoice::AllHostMemory || target == OffloadChoice::AllDisk;
}

// The engine's reasons for refusing `offload` with this config: its validation's issues on runtime.offload.
QString validationReason(const RunConfig& config, Offload offload, bool* refused) {
    RunConfig offloaded = config;
    offloaded.runtime.offload = choiceName(offload);
    *refused = false;
    QString reason;
    for (const ConfigIssue& issue : validateRunConfig(offloaded)) {
        if (issue.path != "runtime.offload") continue;
        *refused = true;
        if (reason.isEmpty()) reason = QString::fromStdString(issue.message);
    }
    return reason;
}

}  // namespace

OffloadChoice::OffloadChoice(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    combo_ = new QComboBox(this);
    combo_->setObjectName(QStringLiteral("offloadCombo"));
    // The closed box elides a long choice ("all → host memory · peak 184 GiB"), its list shows it
    // whole: the choices' length must not widen the panel's narrow column.
    combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo_->setMinimumContentsLength(18);
    combo_->addItem(QString(), int(OnDevice));
    combo_->addItem(QString(), int(HostMemory));
    combo_->addItem(QString(), int(Disk));
    combo_->addItem(QString(), int(AllHostMemory));
    combo_->addItem(QString(), int(AllDisk));
    layout->addWidget(combo_);

    // The disk tier's directory: a real edit of runtime.offload_dir, typed or picked.
    directory_row_ = new QWidget(this);
    auto* row = new QHBoxLayout(directory_row_);
    row->setContentsMargins(0, 0, 0, 0);
    row->setSpacing(4);
    directory_edit_ = new QLineEdit(directory_row_);
    directory_edit_->setObjectName(QStringLiteral("offloadDirEdit"));
    directory_edit_->setPlaceholderText(tr("a directory on a fast disk"));
    directory_edit_->setToolTip(tr("runtime.offload_dir: each rank keeps its moments in scratch files here, read "
                                   "and written bucket by bucket (O_DIRECT) around every optimizer step"));
    directory_button_ = new QToolButton(directory_row_);
    directory_button_->setObjectName(QStringLiteral("offloadDirButton"));
    directory_button_->setText(QStringLiteral("…"));
    directory_button_->setToolTip(tr("Choose runtime.offload_dir"));
    row->addWidget(directory_edit_, 1);
    row->addWidget(directory_button_, 0);
    layout->addWidget(directory_row_);

    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("offloadNoteLabel"));
    note_->setWordWrap(true);
    note_->hide();

    connect(combo_, &QComboBox::currentIndexChanged, this, &OffloadChoice::onChoiceEdited);
    connect(directory_edit_, &QLineEdit::editingFinished, this, &OffloadChoice::onDirectoryEdited);
    connect(directory_button_, &QToolButton::clicked, this, &OffloadChoice::pickDirectory);
}

OffloadChoice::Target OffloadChoice::targetOf(const RuntimeConfig& runtime) {
    if (isChoice(runtime.offload, Offload::All)) return runtime.offload_dir.empty() ? AllHostMemory : AllDisk;
    if (!isChoice(runtime.offload, Offload::Optimizer)) return OnDevice;
    return runtime.offload_dir.empty() ? HostMemory : Disk;
}

QString OffloadChoice::refusal(const RunConfig& config) {
    bool refused = false;
    const QString engine_reason = validationReason(config, Offload::Optimizer, &refused);
    if (!refused) return QString();
    // The engine's rule said shortly; anything newer in the engine's own words.
    if (config.runtime.zero_stage < 1)
        return tr("Offload needs ZeRO stage 1 or more (the moments it moves are each rank's shard): choose "
                  "stage 1 above; on one rank it is the same arithmetic as stage 0.");
    return engine_reason;
}

QString OffloadChoice::allRefusal(const RunConfig& config) {
    bool refused = false;
    const QString engine_reason = validationReason(config, Offload::All, &refused);
    if (!refused) return QString();
    if (config.runtime.zero_stage != 3)
        return tr("Offload all needs ZeRO stage 3: only stage 3 shards the weights whose shard it moves. Choose "
                  "stage 3 above.");
    return engine_reason;
}

void OffloadChoice::setRunConfig(const RunConfig& config, const TargetMachine& target) {
    config_ = config;
    shared_memory_ = !target.gpu;
    if (!config_.runtime.offload_dir.empty()) last_directory_ = QString::fromStdString(config_.runtime.offload_dir);
    refusal_ = refusal(config_);
    all_refusal_ = allRefusal(config_);
    auto peakWith = [&](Offload offload, const std::string& directory) {
        RunConfig variant = config_;
        variant.runtime.offload = choiceName(offload);
        variant.runtime.offload_dir = directory;
        return formatBytes(planOnTarget(variant, target).peak_bytes);
    };
    // The disk tier's peak is the host tier's: only where the moments wait differs.
    const std::string some_directory = last_directory_.isEmpty() ? QDir::tempPath().toStdString()
                                                                 : last_directory_.toStdString();
    // Short enough for the narrow column: the row says "Offload:", the tooltips say the rest.
    const QSignalBlocker block_combo(combo_);
    combo_->setItemText(OnDevice, tr("none · peak %1").arg(peakWith(Offload::None, "")));
    combo_->setItemText(HostMemory, tr("→ host memory · peak %1").arg(peakWith(Offload::Optimizer, "")));
    combo_->setItemText(Disk, tr("→ disk · peak %1").arg(peakWith(Offload::Optimizer, some_directory)));
    // Below stage 3 "all" would plan as "optimizer": the item says what it needs instead.
    const bool all_allowed = all_refusal_.isEmpty();
    combo_->setItemText(AllHostMemory, all_allowed ? tr("all → host memory · peak %1").arg(peakWith(Offload::All, ""))
                                                   : tr("all → host memory · stage 3 only"));
    combo_->setItemText(AllDisk, all_allowed ? tr("all → disk · peak %1").arg(peakWith(Offload::All, some_directory))
                                             : tr("all → disk · stage 3 only"));
    combo_->setCurrentIndex(targetOf(config_.runtime));
    {
        const QSignalBlocker block_edit(directory_edit_);
        directory_edit_->setText(QString::fromStdString(config_.runtime.offload_dir));
    }
    updateControls();
}

void OffloadChoice::setRunLive(bool live) {
    run_live_ = live;
    updateControls();
}

void OffloadChoice::updateControls() {
    const bool refused = !refusal_.isEmpty();
    const bool all_refused = !all_refusal_.isEmpty();
    if (auto* items = qobject_cast<QStandardItemModel*>(combo_->model())) {
        for (const Target target : {HostMemory, Disk}) items->item(target)->setEnabled(!refused);
        for (const Target target : {AllHostMemory, AllDisk}) items->item(target)->setEnabled(!all_refused);
    }
    combo_->setItemData(OnDevice, tr("none: the AdamW moments stay on the device, in the peak"), Qt::ToolTipRole);
    combo_->setItemData(HostMemory,
                        refused ? refusal_
                                : tr("optimizer → host memory: each rank's moments wait in host memory between "
                                     "steps and are stepped on the CPU"),
                        Qt::ToolTipRole);
    combo_->setItemData(Disk,
                        refused ? refusal_
                                : tr("optimizer → disk (runtime.offload_dir): each rank's moments wait in scratch "
                                     "files there, read into two staging slots in host memory bucket by bucket"),
                        Qt::ToolTipRole);
    combo_->setItemData(AllHostMemory,
                        all_refused ? all_refusal_
                                    : tr("all → host memory: the weights' shard too, each unit's brought to the device "
                                         "for its gather"),
                        Qt::ToolTipRole);
    combo_->setItemData(AllDisk,
                        all_refused ? all_refusal_
                                    : tr("all → disk (runtime.offload_dir): the weights' shard too, read from the files "
                                         "for each unit's gather, the next unit's while one is used"),
                        Qt::ToolTipRole);
    const Target target = targetOf(config_.runtime);
    // A config that offloads although it may not keeps "none" within reach.
    combo_->setEnabled(!run_live_ && (!(refused && all_refused) || target != OnDevice));
    combo_->setToolTip(refused ? refusal_
                               : tr("runtime.offload: \"optimizer\" keeps each rank's shard of the AdamW moments off "
                                    "the device between steps and steps it on the CPU, in host memory or, with "
                                    "runtime.offload_dir, in files on a disk (the NVMe tier); the numbers stay the "
                                    "same. \"all\" (ZeRO stage 3) moves the weights' shard too."));
    directory_row_->setVisible(onDisk(target));
    directory_edit_->setEnabled(!run_live_);
    directory_button_->setEnabled(!run_live_);
    showNote();
}

void OffloadChoice::showNote() {
    const Target target = targetOf(config_.runtime);
    QString note;
    if (offloadsAll(target)) {
        note = all_refusal_;
    } else if (target != OnDevice && !refusal_.isEmpty()) {
        note = refusal_;
    } else if (target == Disk && !QFileInfo(directory_edit_->text()).isDir()) {
        note = tr("%1 is not a directory: the run would be refused at start.").arg(directory_edit_->text());
    } else if (target == HostMemory && shared_memory_) {
        // On CPU ranks the device is host memory: the moments leave the peak, not the RAM. (A
        // GPU target plans apart memories, whatever runtime.device this machine trains on.)
        note = tr("On CPU ranks host memory is the device's own: the moments still take RAM. The disk tier "
                  "frees it.");
    }
    note_->setText(note);
    note_->setStyleSheet(QStringLiteral("color: %1;").arg(kNoteColor.name()));
    note_->setVisible(!note.isEmpty());
}

void OffloadChoice::onChoiceEdited(int index) {
    const auto target = static_cast<Target>(combo_->itemData(index).toInt());
    switch (target) {
    case OnDevice:
        request(kOffloadNone, QString());
        break;
    case HostMemory:
        request(kOffloadOptimizer, QString());
        break;
    case Disk:
    case AllDisk:
        request(target == Disk ? kOffloadOptimizer : kOffloadAll, last_directory_.isEmpty() ? QDir::tempPath() : last_directory_);
        directory_edit_->setFocus();
        directory_edit_->selectAll();
        break;
    case AllHostMemory:
        request(kOffloadAll, QString());
        break;
    }
}

void OffloadChoice::onDirectoryEdited() {
    const QString directory = directory_edit_->text().trimmed();
    // An emptied line would mean the host tier: the combo says that, not the directory's line.
    if (directory.isEmpty() || directory.toStdString() == config_.runtime.offload_dir) {
        const QSignalBlocker block_edit(directory_edit_);
        directory_edit_->setText(QString::fromStdString(config_.runtime.offload_dir));
        return;
    }
    // A directory edits the disk tier of the choice in force: optimizer's or all's.
    request(offloadsAll(targetOf(config_.runtime)) ? kOffloadAll : kOffloadOptimizer, directory);
}

void OffloadChoice::pickDirectory() {
    const QString directory = QFileDialog::getExistingDirectory(this, tr("Offload directory (runtime.offload_dir)"),
                                                                directory_edit_->text());
    if (directory.isEmpty()) return;
    {
        const QSignalBlocker block_edit(directory_edit_);
        directory_edit_->setText(directory);
    }
    onDirectoryEdited();
}

void OffloadChoice::request(const QString& offload, const QString& offload_dir) {
    if (!offload_dir.isEmpty()) last_directory_ = offload_dir;
    config_.runtime.offload = offload.toStdString();
    config_.runtime.offload_dir = offload_dir.toStdString();
    {
        const QSignalBlocker block_edit(directory_edit_);
        directory_edit_->setText(offload_dir);
    }
    updateControls();
    Q_EMIT offloadRequested(offload, offload_dir);
}

}  // namespace trainbench::gui
