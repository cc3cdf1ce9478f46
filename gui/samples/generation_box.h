// GenerationBox: prompts, the sampling settings and Generate: a run's newest checkpoint continues each prompt, off the GUI thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <QString>
#include <QWidget>

#include "samples/generation_worker.h"
#include "trainbench/run_config.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTextBrowser;

namespace trainbench::gui {

// What Generate continues prompts with: the shown run, as far as it is known yet.
struct GenerationSource {
    QString run_id;                   // empty: no run shown
    std::optional<RunConfig> config;  // the run's own config, once read from the store
    QString checkpoint_folder;        // RunStore::checkpointFolder(run_id), once read
    int64_t newest_checkpoint = 0;    // the step of the newest checkpoint known; 0: none yet
    bool reading = false;             // the run's record is being read
    QString problem;                  // why a shown run cannot generate (not in the store, its config does not parse)
};

// Generate is on only when it can work: a run whose data section has text (data.source
// "text": the tokenizer that encodes the prompts) and a checkpoint; otherwise the line beside
// it says why in one sentence. Each line of the prompt box is one prompt (line i is the
// engine's "prompt i"; trailing empty lines are dropped). The completions, and the prefill and
// decode tokens per second, replace the last ones; the engine's refusal (ConfigError's
// message) is shown in red in their place.
//
// Object names tests find: promptEdit, maxNewTokensSpin, temperatureSpin (0: greedy),
// topKSpin (0: all), topPSpin, seedSpin, cacheCombo (item data: true for the absorbed cache),
// generateButton, generateReasonLabel, generationStatusLabel, generationText.
class GenerationBox : public QWidget {
    Q_OBJECT

public:
    explicit GenerationBox(QWidget* parent = nullptr);

    // A new run (another run id) clears the completions; a prompt box left empty takes the
    // run's train.sample_prompts, to compare with what it wrote as it trained.
    void setSource(GenerationSource source);
    const GenerationSource& source() const { return source_; }

    // Why Generate is off, in one sentence; empty when it is on.
    QString whyOff() const;
    // Generate's click: false, and nothing starts, while it is off.
    bool generate();
    bool isGenerating() const { return worker_->isRunning(); }
    // The completions shown, with the checkpoint that wrote them; nothing before the first
    // or after an error.
    const std::optional<GenerationResult>& shownResult() const { return shown_; }
    // The completions as shown, without their faces; the status line (tokens per second or
    // the error).
    QString shownText() const;
    QString statusText() const;

    // The prompt box's lines as prompts: line i is prompt i, trailing empty lines dropped, one
    // empty prompt for an empty box (which the engine refuses, naming it).
    static std::vector<std::string> promptsOf(const QString& text);

Q_SIGNALS:
    // A generation ended: its completions or its error are shown.
    void finished(bool ok);

private:
    void updateGenerateButton();
    void showResult(const GenerationResult& result);
    void showError(const QString& message);
    void showStatus(const QString& text, bool error);

    GenerationSource source_;
    GenerationWorker* worker_ = nullptr;
    std::optional<GenerationResult> shown_;
    QPlainTextEdit* prompt_edit_ = nullptr;
    QSpinBox* max_new_tokens_spin_ = nullptr;
    QDoubleSpinBox* temperature_spin_ = nullptr;
    QSpinBox* top_k_spin_ = nullptr;
    QDoubleSpinBox* top_p_spin_ = nullptr;
    QSpinBox* seed_spin_ = nullptr;
    QComboBox* cache_combo_ = nullptr;
    QPushButton* generate_button_ = nullptr;
    QLabel* reason_label_ = nullptr;
    QLabel* status_label_ = nullptr;
    QTextBrowser* text_ = nullptr;
};

}  // namespace trainbench::gui
