// SamplesPanel: the Training view's Samples page: what the shown run wrote as it trained, and prompts its newest checkpoint continues.
#pragma once

#include <QString>
#include <QWidget>

#include "samples/generation_box.h"
#include "trainbench/metric_point.h"

namespace trainbench::gui {

class SampleView;
class StoreReader;

// Shows one run at a time, the one the Training view shows (the window's own, or a watched
// run of the store): the shell calls showRun when that changes and passes on every event of
// the run (addEvent), live or replayed from the store. A sample event is shown at its step, a
// checkpoint event turns Generate on; the rest are someone else's. What the events do not
// carry, the run's config (the tokenizer and the model Generate needs) and its checkpoint
// folder, is read from the store on a StoreReader's thread.
//
// The window title says how many samples there are ("Samples (12)"), for the tab that holds
// the panel. Object names tests find: samplesPanel, sampleView, generationBox and theirs.
class SamplesPanel : public QWidget {
    Q_OBJECT

public:
    explicit SamplesPanel(QWidget* parent = nullptr);

    // Shows run `run_id` of the store in `store_folder`: no samples until its events arrive,
    // Generate off until its record has been read (runRead).
    void showRun(const QString& store_folder, const QString& run_id);
    const QString& runId() const { return run_id_; }
    void addEvent(const trainbench::RunEvent& event);
    // Writes pending samples now (before a screenshot).
    void flush();

    SampleView* sampleView() const { return view_; }
    GenerationBox* generationBox() const { return box_; }

Q_SIGNALS:
    // The shown run's record has been read (or found missing): Generate knows what it has.
    void runRead();

private:
    struct StoredRun;
    void readRun();
    void takeStoredRun(const StoredRun& stored);
    void updateTitle();
    void updatePlaceholder();

    QString store_folder_;
    QString run_id_;
    StoreReader* reader_ = nullptr;
    GenerationSource source_;
    SampleView* view_ = nullptr;
    GenerationBox* box_ = nullptr;
};

}  // namespace trainbench::gui
