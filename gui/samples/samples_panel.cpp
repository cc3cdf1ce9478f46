// SamplesPanel: the Training view's Samples page: what the shown run wrote as it trained, and prompts its newest checkpoint continues.
#include "samples/samples_panel.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include <QGroupBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "runs/store_reader.h"
#include "samples/sample_view.h"
#include "trainbench/config_choices.h"
#include "trainbench/config_io.h"
#include "trainbench/event_kind.h"
#include "trainbench/run_sample.h"

namespace trainbench::gui {

// What the store says of the shown run, read on the reader's thread.
struct SamplesPanel::StoredRun {
    QString run_id;
    bool found = false;
    std::optional<RunConfig> config;
    QString config_error;
    QString checkpoint_folder;
    int64_t newest_checkpoint = 0;  // the newest recorded checkpoint still on disk
};

SamplesPanel::SamplesPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("samplesPanel"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);

    // Side by side: what the run wrote at each step beside what its newest weights write now.
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->setChildrenCollapsible(false);
    auto* written = new QGroupBox(tr("Written as it trained"), splitter);
    auto* written_layout = new QVBoxLayout(written);
    view_ = new SampleView(written);
    view_->setObjectName(QStringLiteral("sampleView"));
    written_layout->addWidget(view_);
    auto* generate = new QGroupBox(tr("Generate with the newest checkpoint"), splitter);
    auto* generate_layout = new QVBoxLayout(generate);
    box_ = new GenerationBox(generate);
    box_->setObjectName(QStringLiteral("generationBox"));
    generate_layout->addWidget(box_);
    splitter->addWidget(written);
    splitter->addWidget(generate);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);
    // Halves: the settings would otherwise take the width the samples' lines need.
    splitter->setSizes({1000, 1000});
    layout->addWidget(splitter);

    box_->setSource(source_);
    updatePlaceholder();
    updateTitle();
}

void SamplesPanel::showRun(const QString& store_folder, const QString& run_id) {
    if (!reader_ || reader_->folder() != store_folder) {
        // A result for the old folder dies with its reader.
        delete reader_;
        reader_ = new StoreReader(store_folder, this);
        connect(reader_, &StoreReader::failed, this, [this](const QString& message) {
            source_.reading = false;
            source_.problem = tr("The run store cannot be read: %1").arg(message);
            box_->setSource(source_);
            Q_EMIT runRead();
        });
    }
    store_folder_ = store_folder;
    run_id_ = run_id;
    source_ = GenerationSource{};
    source_.run_id = run_id;
    source_.reading = true;
    view_->clear();
    box_->setSource(source_);
    updatePlaceholder();
    updateTitle();
    readRun();
}

void SamplesPanel::readRun() {
    reader_->post<StoredRun>(
        [id = run_id_](RunStore& store) {
            StoredRun stored;
            stored.run_id = id;
            const std::optional<RunRecord> record = store.findRun(id.toStdString());
            if (!record) return stored;
            stored.found = true;
            try {
                stored.config = parseRunConfig(record->config_json, "run " + record->run_id);
            } catch (const std::exception& error) {
                stored.config_error = QString::fromStdString(error.what());
            }
            stored.checkpoint_folder = QString::fromStdString(store.checkpointFolder(record->run_id));
            // A recorded checkpoint may have been pruned since: only those on disk count.
            for (const CheckpointRecord& checkpoint : store.checkpoints(record->run_id)) {
                std::error_code error;
                if (std::filesystem::is_directory(checkpoint.path, error))
                    stored.newest_checkpoint = std::max(stored.newest_checkpoint, checkpoint.step);
            }
            return stored;
        },
        [this](StoredRun stored) { takeStoredRun(stored); });
}

void SamplesPanel::takeStoredRun(const StoredRun& stored) {
    if (stored.run_id != run_id_) return;  // another run is shown meanwhile
    source_.reading = false;
    if (!stored.found) {
        source_.problem = tr("Run %1 is not in the run store (%2): its config and checkpoints are not known.")
                              .arg(stored.run_id, store_folder_);
    } else if (!stored.config) {
        source_.problem = tr("The run's stored config does not parse: %1").arg(stored.config_error);
    }
    source_.config = stored.config;
    source_.checkpoint_folder = stored.checkpoint_folder;
    // Checkpoint events may have come first (a live run, a replay): the newest of both counts.
    source_.newest_checkpoint = std::max(source_.newest_checkpoint, stored.newest_checkpoint);
    box_->setSource(source_);
    updatePlaceholder();
    Q_EMIT runRead();
}

void SamplesPanel::addEvent(const RunEvent& event) {
    const std::optional<EventKind> kind = eventKindNamed(event.kind);
    if (kind == EventKind::Sample) {
        if (std::optional<RunSample> sample = sampleOfEvent(event)) {
            view_->add(std::move(*sample));
            updateTitle();
        }
    } else if (kind == EventKind::Checkpoint && event.step > source_.newest_checkpoint) {
        source_.newest_checkpoint = event.step;
        box_->setSource(source_);
    }
}

void SamplesPanel::flush() { view_->flush(); }

void SamplesPanel::updateTitle() {
    const int count = view_->log().count();
    setWindowTitle(count > 0 ? tr("Samples (%1)").arg(count) : tr("Samples"));
}

void SamplesPanel::updatePlaceholder() {
    QString text;
    if (run_id_.isEmpty()) {
        text = tr("No run shown yet. A run on text (data.source \"text\", \"jsonl\" or \"parquet\") with "
                  "train.sample_every above 0 writes samples here as it trains: every that many steps and at its end, the model continues each line of "
                  "train.sample_prompts (none: the start of a document).");
    } else if (!source_.config) {
        text = tr("No samples of run %1.").arg(run_id_);
    } else if (!readsDocuments(source_.config->data)) {
        text = tr("This run writes no samples: it trains on data.source \"%1\", and samples need text "
                  "(\"text\", \"jsonl\" or \"parquet\").")
                   .arg(QString::fromStdString(source_.config->data.source));
    } else if (source_.config->train.sample_every <= 0) {
        text = tr("This run writes no samples: train.sample_every is 0. Set it (Configure, train section) for the "
                  "next run; Generate works with any checkpoint.");
    } else {
        text = tr("No samples yet: the run writes them every %1 steps (train.sample_every) and at its end.")
                   .arg(source_.config->train.sample_every);
    }
    view_->setPlaceholder(text);
}

}  // namespace trainbench::gui
