// HfExportDialog: where and how a run's checkpoint is written as a Hugging Face directory (folder, dtype, expert layout, shards).
#pragma once

#include <QDialog>
#include <QString>

#include "runs/hf_export_worker.h"

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace trainbench::gui {

// The choices of `trainbench-cli export-hf`, with its defaults: bf16, per-expert, 5GB shards.
// The folder is the directory the export creates: one that exists is refused here already
// (the engine would refuse it too). Object names: hfExportDialog, hfExportFolder,
// hfExportBrowseButton, hfExportDtype, hfExportLayout, hfExportShardSize, hfExportNote.
class HfExportDialog : public QDialog {
    Q_OBJECT

public:
    // `run_label`: the run as the list names it; `step`: the checkpoint that will be exported.
    HfExportDialog(const QString& run_label, qint64 step, const QString& suggested_folder, QWidget* parent = nullptr);

    // The choices; run_id and checkpoint_folder are the caller's to fill in.
    HfExportParams params() const;
    void setFolder(const QString& folder);

    // A folder that does not exist yet for `name` under `parent`: parent/name-hf, else
    // parent/name-hf-2, -3, ...
    static QString freshFolder(const QString& parent, const QString& name);

private:
    void browse();
    void check();

    QLineEdit* folder_ = nullptr;
    QComboBox* dtype_ = nullptr;
    QComboBox* layout_ = nullptr;
    QLineEdit* shard_size_ = nullptr;
    QLabel* note_ = nullptr;
    QDialogButtonBox* buttons_ = nullptr;
};

}  // namespace trainbench::gui
