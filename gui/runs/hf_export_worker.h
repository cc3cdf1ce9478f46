// HfExportWorker: writes a run's newest checkpoint as a Hugging Face directory on a thread of its own, reporting by Qt signals.
#pragma once

#include <thread>

#include <QObject>
#include <QString>

#include "trainbench/checkpoints.h"
#include "trainbench/hf_interop.h"

Q_DECLARE_METATYPE(trainbench::HfExportSummary)

namespace trainbench::gui {

// What one export writes, as `trainbench-cli export-hf RUN_ID --out DIR` would.
struct HfExportParams {
    QString run_id;
    QString checkpoint_folder;  // RunStore::checkpointFolder(run_id)
    QString out_dir;            // created; an existing one is refused
    QString dtype = QStringLiteral("bf16");                 // bf16 | fp32
    QString expert_layout = QStringLiteral("per-expert");  // per-expert | fused
    QString shard_size = QStringLiteral("5GB");            // parseByteSize's forms
};

// Thread contract as NoiseScaleWorker's: the worker lives on the GUI thread; start() and the
// destructor are called there and every signal is emitted there. The export (the newest
// checkpoint that verifies, read, converted and written to a `.partial` directory renamed at
// the end) cannot be cancelled: the destructor waits for it. One export at a time.
class HfExportWorker : public QObject {
    Q_OBJECT

public:
    explicit HfExportWorker(QObject* parent = nullptr);
    ~HfExportWorker() override;

    // False (and nothing happens) while an export runs.
    bool start(HfExportParams params);
    bool isRunning() const { return running_; }

Q_SIGNALS:
    // summary.checkpoint and summary.step: the checkpoint that was exported.
    void exported(const QString& run_id, const trainbench::HfExportSummary& summary);
    // The engine's refusal (a ConfigError's message: the option, field or file at fault).
    void failed(const QString& run_id, const QString& message);

private:
    void joinThread();
    std::thread thread_;
    bool running_ = false;
};

}  // namespace trainbench::gui
