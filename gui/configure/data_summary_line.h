// DataSummaryLine: what the data section amounts to (tokenizer, vocab, token counts), kept up to date off the GUI thread.
#pragma once

#include <optional>

#include <QString>
#include <QTimer>
#include <QWidget>

#include "trainbench/config_io.h"
#include "trainbench/data_summary.h"
#include "trainbench/run_config.h"

class QLabel;
class QProgressBar;
class QPushButton;

namespace trainbench::gui {

class DataSummaryWorker;

// One line, e.g. "byte-level BPE · vocab 32,000 · 1,234,567 train tokens · 65,432 validation ·
// 0.27 tokens per byte"; for jsonl and parquet, a line for each part under it, with its
// documents (pairs) and, for pairs, the tokens the loss counts:
//   JSON Lines · bytes · vocab 256 · 1.27 tokens per byte
//   train: 3 pairs, 14 tokens, 6 counted
//   validation: none
// The windows per epoch go in its tooltip.
QString dataSummaryText(const DataSummary& summary, const DataConfig& data);

// The line follows the config it is given: when what describeData reads changes (the data
// section, model.vocab_size, train.seq_len, train.eval_every), it asks a DataSummaryWorker
// again, a moment after the last change, so typing a path does not read every prefix of it.
// Meanwhile it says so, with a bar while a corpus is tokenised. A refusal is shown in red and
// kept as issue() for the view to mark its field. A corpus of documents over
// kAutoDescribeLimitBytes is counted only when the user asks (the countTokensButton).
//
// Object names: dataSummaryLine, dataSummaryLabel, dataSummaryProgress, countTokensButton.
class DataSummaryLine : public QWidget {
    Q_OBJECT

public:
    explicit DataSummaryLine(QWidget* parent = nullptr);
    ~DataSummaryLine() override;

    // `valid`: the config passes validateRunConfig (describeData's precondition); otherwise the
    // line waits for a valid one. Forgets the previous config's refusal without a signal (the
    // caller shows its issues next).
    void setConfig(const RunConfig& config, bool valid);

    QString text() const;
    // describeData's refusal of the config shown, if any.
    const std::optional<ConfigIssue>& issue() const { return issue_; }
    // The last summary of the config shown, if described.
    const std::optional<DataSummary>& summary() const { return summary_; }
    // True while a description of the config shown is awaited.
    bool isBusy() const;

    static constexpr int kSettleMs = 400;

Q_SIGNALS:
    // issue() changed after a description answered.
    void issueChanged();
    // A description of the config shown answered (described, refused or too large to do unasked).
    void answered();

private:
    void describeNow(bool force);
    void showBusy(const QString& text);
    void showText(const QString& text, const QString& color);
    void onProgress(const QString& what, qint64 done, qint64 total);
    void onDescribed(const DataSummary& summary);
    void onFailed(const QString& field, const QString& message);
    void onTooLarge(const QString& field, qint64 limit);

    enum class State { Invalid, Waiting, Described, Refused, TooLarge };

    RunConfig config_;
    QString key_;            // what describeData reads of config_, as JSON; empty: nothing shown yet
    QString requested_key_;  // of the config last asked of the worker
    bool valid_ = false;
    State state_ = State::Invalid;
    std::optional<ConfigIssue> issue_;
    std::optional<DataSummary> summary_;

    DataSummaryWorker* worker_ = nullptr;
    QTimer settle_timer_;
    QLabel* label_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* count_button_ = nullptr;
};

}  // namespace trainbench::gui
