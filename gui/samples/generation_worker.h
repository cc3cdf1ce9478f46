// GenerationWorker: continues prompts with a run's newest checkpoint (generateText) on a thread of its own, reporting by Qt signals.
#pragma once

#include <cstdint>
#include <thread>

#include <QMetaType>
#include <QObject>
#include <QString>

#include "trainbench/text_generation.h"

namespace trainbench::gui {

// What one press of Generate asks for: the request as generateText takes it, but for its
// weights, which are the newest checkpoint in `checkpoint_folder` that verifies, found on the
// worker's thread (the checksums are read).
struct GenerationParams {
    QString run_id;
    QString checkpoint_folder;  // RunStore::checkpointFolder(run_id)
    TextGenerationRequest request;
};

struct GenerationResult {
    QString run_id;
    QString checkpoint;  // the directory whose weights wrote the text
    int64_t checkpoint_step = 0;
    TextGeneration generation;
};

// Thread contract as HfExportWorker's: the worker lives on the GUI thread; start() and the
// destructor are called there and every signal is emitted there. generateText cannot be
// cancelled: the destructor waits for it (a few seconds for the models the workbench trains
// on a CPU). One generation at a time.
class GenerationWorker : public QObject {
    Q_OBJECT

public:
    explicit GenerationWorker(QObject* parent = nullptr);
    ~GenerationWorker() override;

    // False (and nothing happens) while a generation runs.
    bool start(GenerationParams params);
    bool isRunning() const { return running_; }

Q_SIGNALS:
    void generated(const trainbench::gui::GenerationResult& result);
    // The engine's refusal: a ConfigError's message names the field or the prompt at fault
    // ("prompt 2 is empty"), checkpointOfStep's says there is no checkpoint.
    void failed(const QString& run_id, const QString& message);

private:
    void finish();
    std::thread thread_;
    bool running_ = false;
};

}  // namespace trainbench::gui

Q_DECLARE_METATYPE(trainbench::gui::GenerationResult)
