// SampleView: the samples a run wrote as it trained, newest step first or one step picked, each prompt apart from the model's text.
#pragma once

#include <cstdint>

#include <QString>
#include <QTimer>
#include <QWidget>

#include "samples/sample_log.h"
#include "trainbench/run_sample.h"

class QComboBox;
class QLabel;
class QTextBrowser;

namespace trainbench::gui {

// A run's samples over its steps show what the model learned: the newest step on top, each
// older one below it (at most kShownSteps of them; the step picker reaches any one step).
// Samples arrive one at a time, and a stored run replays all of them at once: each addition
// asks for one rewrite of the text at the end of the event-loop turn, so a burst is written
// once. Everything runs on the GUI thread.
//
// Object names tests find: sampleStepCombo (item data: the step, -1 for all steps),
// sampleCountLabel, sampleText.
class SampleView : public QWidget {
    Q_OBJECT

public:
    static constexpr int kShownSteps = 100;

    explicit SampleView(QWidget* parent = nullptr);

    void add(RunSample sample);
    void clear();
    const SampleLog& log() const { return log_; }
    // What the text says while there are no samples.
    void setPlaceholder(const QString& text);

    // Writes a pending change now (before a screenshot, or a test reading the text).
    void flush();
    // The text as shown, without its faces.
    QString shownText() const;
    // Shows one step (-1: all, newest first).
    void pickStep(int64_t step);

private:
    void rewrite();
    void updateStepPicker();
    int64_t pickedStep() const;

    SampleLog log_;
    QComboBox* step_combo_ = nullptr;
    QLabel* count_label_ = nullptr;
    QTextBrowser* text_ = nullptr;
    QTimer rewrite_timer_;
};

}  // namespace trainbench::gui
