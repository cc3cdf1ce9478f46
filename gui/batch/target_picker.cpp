// TargetPicker: the batch panel's "Plan for:" row: this machine, or N devices of a named GPU kind (or of a custom memory), in nodes of so many (the config's target section).
#include "batch/target_picker.h"

#include <algorithm>
#include <cmath>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>

#include "common/display_format.h"
#include "trainbench/config_choices.h"

namespace trainbench::gui {

namespace {

// Far beyond the clusters a plan is made for (the advice's fewest ranks stop at 4096 too).
constexpr int kMostDevices = 4096;
constexpr int kMostDevicesPerNode = 64;
// A custom device: up to a TiB (validation allows more; no accelerator comes near it).
constexpr double kMostMemoryGiB = 1024;
// The memory a custom device starts at: the class of the published configs' claims.
constexpr double kCustomMemoryGiB = 80;
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

QString kindName(TargetKind kind) { return QString::fromLatin1(choiceName(kind)); }

}  // namespace

TargetPicker::TargetPicker(QWidget* parent) : QWidget(parent) {
    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);

    kind_combo_ = new QComboBox(this);
    kind_combo_->setObjectName(QStringLiteral("targetKindCombo"));
    kind_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    kind_combo_->setMinimumContentsLength(16);
    kind_combo_->addItem(tr("This machine"), kindName(TargetKind::Here));
    kind_combo_->setItemData(0, tr("Plan on this machine, as runtime says (its device, ranks and memory)"),
                             Qt::ToolTipRole);
    for (const DeviceKind& kind : deviceKinds()) {
        kind_combo_->addItem(kindText(kind), QString::fromLatin1(kind.name));
        kind_combo_->setItemData(kind_combo_->count() - 1,
                                 tr("%1: %2 TFLOP/s bf16 dense, nodes of %3 as in its DGX")
                                     .arg(QString::fromLatin1(kind.label))
                                     .arg(kind.bf16_tflops, 0, 'f', 0)
                                     .arg(kind.devices_per_node),
                                 Qt::ToolTipRole);
    }
    kind_combo_->addItem(tr("Custom memory"), kindName(TargetKind::Custom));
    kind_combo_->setItemData(kind_combo_->count() - 1, tr("A GPU of the memory given below; its rates unknown"),
                             Qt::ToolTipRole);
    kind_combo_->setToolTip(tr("target.kind: the machine the plan, what fits and the step time are for. Start "
                               "and the explorer stay on this machine."));
    form->addRow(tr("Plan for:"), kind_combo_);

    devices_spin_ = new QSpinBox(this);
    devices_spin_->setObjectName(QStringLiteral("targetDevicesSpin"));
    devices_spin_->setRange(1, kMostDevices);
    devices_spin_->setToolTip(tr("target.devices: the devices (ranks) the plan is for"));
    per_node_spin_ = new QSpinBox(this);
    per_node_spin_->setObjectName(QStringLiteral("targetDevicesPerNodeSpin"));
    per_node_spin_->setRange(1, kMostDevicesPerNode);
    per_node_spin_->setToolTip(tr("target.devices_per_node: devices sharing a node's host memory and NVMe; "
                                  "collectives inside a node use its interconnect"));
    auto* counts = new QHBoxLayout;
    counts->setContentsMargins(0, 0, 0, 0);
    counts->addWidget(devices_spin_);
    auto* per_node_caption = new QLabel(tr("a node:"), this);
    per_node_caption->setToolTip(per_node_spin_->toolTip());
    counts->addWidget(per_node_caption);
    counts->addWidget(per_node_spin_);
    counts->addStretch(1);
    form->addRow(tr("Devices:"), counts);

    memory_spin_ = new QDoubleSpinBox(this);
    memory_spin_->setObjectName(QStringLiteral("targetMemorySpin"));
    memory_spin_->setRange(1, kMostMemoryGiB);
    memory_spin_->setDecimals(1);
    memory_spin_->setSuffix(tr(" GiB"));
    memory_spin_->setToolTip(tr("target.device_memory_gib: the memory of one device (custom kind)"));
    form->addRow(tr("Memory each:"), memory_spin_);

    connect(kind_combo_, &QComboBox::currentIndexChanged, this, &TargetPicker::onKindEdited);
    // A typed count is one edit when typing ends, not one per digit. Each box sets its own field
    // only: the others keep "the kind's" (0) when the section says so.
    devices_spin_->setKeyboardTracking(false);
    per_node_spin_->setKeyboardTracking(false);
    memory_spin_->setKeyboardTracking(false);
    connect(devices_spin_, &QSpinBox::valueChanged, this, [this](int devices) {
        TargetConfig next = section_;
        next.devices = devices;
        request(next);
    });
    connect(per_node_spin_, &QSpinBox::valueChanged, this, [this](int per_node) {
        TargetConfig next = section_;
        next.devices_per_node = per_node;
        request(next);
    });
    connect(memory_spin_, &QDoubleSpinBox::valueChanged, this, [this](double gib) {
        TargetConfig next = section_;
        next.device_memory_gib = std::round(gib * 10) / 10;
        request(next);
    });
}

QString TargetPicker::kindText(const DeviceKind& kind) {
    return tr("%1 · %2").arg(QString::fromLatin1(kind.label), formatBytes(kind.memory_mib * 1024 * 1024));
}

void TargetPicker::setRunConfig(const RunConfig& config, const TargetMachine& target) {
    section_ = config.target;
    const QSignalBlocker block_kind(kind_combo_);
    const QSignalBlocker block_devices(devices_spin_);
    const QSignalBlocker block_per_node(per_node_spin_);
    const QSignalBlocker block_memory(memory_spin_);
    kind_combo_->setCurrentIndex(std::max(0, kind_combo_->findData(QString::fromStdString(section_.kind))));
    devices_spin_->setValue(static_cast<int>(std::clamp<int64_t>(target.devices, 1, kMostDevices)));
    per_node_spin_->setValue(static_cast<int>(std::clamp<int64_t>(target.devices_per_node, 1, kMostDevicesPerNode)));
    memory_spin_->setValue(std::clamp(double(target.device_memory_bytes) / kBytesPerGiB, 1.0, kMostMemoryGiB));
    updateControls();
}

void TargetPicker::setRunLive(bool live) {
    run_live_ = live;
    updateControls();
}

void TargetPicker::updateControls() {
    const bool here = isChoice(section_.kind, TargetKind::Here);
    kind_combo_->setEnabled(!run_live_);
    devices_spin_->setEnabled(!run_live_ && !here);
    per_node_spin_->setEnabled(!run_live_ && !here);
    memory_spin_->setEnabled(!run_live_ && isChoice(section_.kind, TargetKind::Custom));
    const QString why_fixed = here ? tr(" (this machine: runtime.world_size, edited on the Configure view)") : QString();
    devices_spin_->setToolTip(tr("target.devices: the devices (ranks) the plan is for") + why_fixed);
    memory_spin_->setToolTip(isChoice(section_.kind, TargetKind::Custom)
                                 ? tr("target.device_memory_gib: the memory of one device")
                                 : tr("The memory of one device of this kind (choose custom to set it)"));
}

void TargetPicker::onKindEdited(int index) {
    if (index < 0) return;
    TargetConfig next = section_;
    const bool was_here = isChoice(next.kind, TargetKind::Here);
    next.kind = kind_combo_->itemData(index).toString().toStdString();
    const TargetKind kind = parseChoice<TargetKind>(next.kind);
    if (kind == TargetKind::Here) {
        // This machine is what runtime says: figures typed for another machine do not describe it.
        next.devices = 0;
        next.devices_per_node = 0;
        next.device_memory_gib = 0;
    } else {
        if (const DeviceKind* named = findDeviceKind(kind)) {
            if (was_here && next.devices == 0) next.devices = named->devices_per_node;
            next.device_memory_gib = 0;  // the kind's own
        } else {
            if (was_here && next.devices == 0) next.devices = devices_spin_->value() > 1 ? devices_spin_->value() : 8;
            if (!(next.device_memory_gib > 0)) next.device_memory_gib = kCustomMemoryGiB;
        }
        next.devices_per_node = 0;  // the kind's node
    }
    request(next);
}

void TargetPicker::request(const TargetConfig& next) {
    section_ = next;
    updateControls();
    Q_EMIT targetRequested(next);
}

}  // namespace trainbench::gui
