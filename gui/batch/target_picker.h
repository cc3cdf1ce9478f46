// TargetPicker: the batch panel's "Plan for:" row: this machine, or N devices of a named GPU kind (or of a custom memory), in nodes of so many (the config's target section).
#pragma once

#include <QWidget>

#include "trainbench/run_config.h"
#include "trainbench/target_machine.h"

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace trainbench::gui {

// The kind list is deviceKinds() between "This machine" and "Custom", each named GPU with its
// memory. Devices and devices per node show the resolved target (0 in the section: the runtime's
// ranks, the kind's node); memory per device is edited for custom only and shows the kind's
// otherwise. "This machine" plans on runtime's ranks: its counts follow runtime and are not
// edited here.
//
// Each edit is one targetRequested with the whole new section (the other figures as the config
// has them); the owner applies it (undoably) or hands the panel its config back. Choosing a GPU
// kind from this machine asks for one node of it (the kind's devices per node) unless the section
// names a count already; choosing custom asks for 80 GiB unless it names a memory.
//
// Widgets that tests drive carry object names: targetKindCombo, targetDevicesSpin,
// targetDevicesPerNodeSpin, targetMemorySpin.
class TargetPicker : public QWidget {
    Q_OBJECT

public:
    explicit TargetPicker(QWidget* parent = nullptr);

    // Shows the config's target section as `target` (its resolveTarget) reads it.
    void setRunConfig(const RunConfig& config, const TargetMachine& target);
    void setRunLive(bool live);

    // The combo's text for a kind: "H100 80 GB · 79.6 GiB", "This machine", "Custom memory".
    static QString kindText(const DeviceKind& kind);

Q_SIGNALS:
    void targetRequested(const trainbench::TargetConfig& target);

private:
    void onKindEdited(int index);
    void request(const TargetConfig& next);
    void updateControls();

    TargetConfig section_;
    bool run_live_ = false;

    QComboBox* kind_combo_ = nullptr;
    QSpinBox* devices_spin_ = nullptr;
    QSpinBox* per_node_spin_ = nullptr;
    QDoubleSpinBox* memory_spin_ = nullptr;
};

}  // namespace trainbench::gui
