// DataSummaryWorker: describes a config's data section (describeData) on a thread of its own, with the tokeniser's progress.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include <QObject>
#include <QString>

#include "trainbench/data_summary.h"
#include "trainbench/run_config.h"

Q_DECLARE_METATYPE(trainbench::DataSummary)

namespace trainbench::gui {

// Describing a corpus of documents (text, jsonl, parquet) reads all of it (and, with
// data.tokenizer, tokenises it on every core the first time): a path on its way to being typed
// ("/", "/home") must not start that. Without `force`, such a corpus larger than this on disk
// is measured only (its files' sizes, stopping there) and reported with tooLarge; force
// describes it whatever its size.
constexpr int64_t kAutoDescribeLimitBytes = int64_t(512) << 20;

// Thread contract:
// - The worker lives on the GUI thread; request(), the destructor and every other method are
//   called there, and every signal is emitted there. The describing thread touches nothing
//   of the worker but queued calls into the GUI thread's event loop.
// - One description at a time. A request made while one runs waits for it; a newer request
//   replaces the waiting one, and the result of a description that a newer request has
//   overtaken is dropped, so described, failed and tooLarge always answer the newest request.
// - describeData cannot be cancelled. The destructor waits for the description in flight
//   (reading and, the first time, tokenising the corpus: seconds, minutes for gigabytes);
//   its result goes nowhere. The window is gone by then (the view dies with it).
// - The engine's tokenising progress (setTokenizeProgress, one callback per process) reaches
//   the worker through a hub installed once for the process's life: while a description runs,
//   its worker hears the progress of every corpus the process tokenises (a run being started
//   tokenises the same corpus, which the description has cached by then).
class DataSummaryWorker : public QObject {
    Q_OBJECT

public:
    explicit DataSummaryWorker(QObject* parent = nullptr);
    ~DataSummaryWorker() override;

    // Describes `config` (validated: describeData's precondition), now or after the running
    // description.
    void request(const RunConfig& config, bool force = false);
    // True from a request until its answer has been emitted.
    bool isBusy() const { return running_ || pending_.has_value(); }

Q_SIGNALS:
    // About every 200 ms while a corpus is tokenised, and once at its end (done == total).
    void progress(const QString& what, qint64 done_bytes, qint64 total_bytes);
    void described(const trainbench::DataSummary& summary);
    // describeData refused the config: `field` is the ConfigError's dotted path (empty when
    // the engine named none), `message` its text.
    void failed(const QString& field, const QString& message);
    // Not forced, and `field` (data.path or data.val_path) holds more than `limit_bytes`.
    void tooLarge(const QString& field, qint64 limit_bytes);

private:
    struct Request {
        RunConfig config;
        bool force = false;
    };
    struct Answer;

    void startNext();
    void deliver(const std::shared_ptr<Answer>& answer);
    void joinThread();

    std::thread thread_;
    bool running_ = false;
    std::optional<Request> pending_;
    std::atomic<bool> describing_{false};  // set by the describing thread around describeData
    int64_t listener_ = 0;  // this worker's id in the progress hub
};

}  // namespace trainbench::gui
