// DataSummaryLine: what the data section amounts to (tokenizer, vocab, token counts), kept up to date off the GUI thread.
#include "configure/data_summary_line.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "common/display_format.h"
#include "configure/data_summary_worker.h"

namespace trainbench::gui {

namespace {

constexpr int kProgressSteps = 1000;
const char* const kErrorColor = "#b00020";  // the issues summary's red
const char* const kQuietColor = "#666666";

// What describeData reads of a config, as compact JSON: a change anywhere else (the model's
// width, the learning rate) leaves the counts as they are.
QString describedPart(const RunConfig& config) {
    const QJsonObject all = QJsonDocument::fromJson(QByteArray::fromStdString(runConfigToJson(config))).object();
    const QJsonObject model = all.value(QStringLiteral("model")).toObject();
    const QJsonObject train = all.value(QStringLiteral("train")).toObject();
    const QJsonObject part{{QStringLiteral("data"), all.value(QStringLiteral("data"))},
                           {QStringLiteral("vocab_size"), model.value(QStringLiteral("vocab_size"))},
                           {QStringLiteral("seq_len"), train.value(QStringLiteral("seq_len"))},
                           {QStringLiteral("eval_every"), train.value(QStringLiteral("eval_every"))}};
    return QString::fromUtf8(QJsonDocument(part).toJson(QJsonDocument::Compact));
}

// describeData's "byte-level BPE (/path/tokenizer.json)" without the path the field shows.
QString tokenizerKind(const DataSummary& summary, const DataConfig& data) {
    QString kind = QString::fromStdString(summary.tokenizer);
    const QString suffix = QStringLiteral(" (%1)").arg(QString::fromStdString(data.tokenizer));
    if (!data.tokenizer.empty() && kind.endsWith(suffix)) kind.chop(suffix.size());
    return kind;
}

bool readsRecords(const std::string& source) {
    return isChoice(source, DataSource::Jsonl) || isChoice(source, DataSource::Parquet) ||
           isChoice(source, DataSource::HfDataset);
}

QString recordFormat(const std::string& source) {
    if (isChoice(source, DataSource::Jsonl)) return QObject::tr("JSON Lines");
    if (isChoice(source, DataSource::Parquet)) return QObject::tr("Parquet");
    return QObject::tr("Hugging Face dataset");
}

QString documentsText(int64_t count, bool pairs) {
    if (pairs) return count == 1 ? QObject::tr("1 pair") : QObject::tr("%1 pairs").arg(formatGrouped(count));
    return count == 1 ? QObject::tr("1 document") : QObject::tr("%1 documents").arg(formatGrouped(count));
}

// One part of a record corpus, "train: 3 pairs, 14 tokens, 6 counted": its documents, its
// tokens and, for pairs, the tokens the loss counts. Each phrase keeps together; a narrow
// line wraps after a comma.
QString recordPartText(const QString& name, std::optional<int64_t> documents, std::optional<int64_t> tokens,
                       std::optional<int64_t> counted, bool pairs) {
    if (!tokens || *tokens == 0) return QObject::tr("%1: none").arg(name);
    QStringList phrases;
    if (documents) phrases << documentsText(*documents, pairs);
    phrases << QObject::tr("%1 tokens").arg(formatGrouped(*tokens));
    if (pairs && counted) phrases << QObject::tr("%1 counted").arg(formatGrouped(*counted));
    for (QString& phrase : phrases) phrase.replace(QLatin1Char(' '), QChar(0x00A0));
    return QObject::tr("%1: %2").arg(name, phrases.join(QStringLiteral(", ")));
}

}  // namespace

QString dataSummaryText(const DataSummary& summary, const DataConfig& data) {
    QStringList parts;
    QStringList record_parts;  // a line each, under the others
    if (!summary.mixture.empty()) {
        QStringList shares;
        for (const auto& part : summary.mixture)
            shares << QStringLiteral("%1 %2 %").arg(QString::fromStdString(part.name), QString::number(part.share * 100, 'g', 3));
        parts << QObject::tr("mixture of %1").arg(shares.join(QStringLiteral(", ")));
        parts << tokenizerKind(summary, data);
    } else if (readsRecords(summary.source)) {
        parts << recordFormat(summary.source);
        parts << tokenizerKind(summary, data);
    } else if (isChoice(summary.source, DataSource::Text)) {
        parts << tokenizerKind(summary, data);
    } else if (isChoice(summary.source, DataSource::Markov)) {
        parts << QObject::tr("synthetic Markov language");
    } else if (isChoice(summary.source, DataSource::Tokens)) {
        parts << QObject::tr("token file (%1)").arg(QString::fromStdString(data.dtype));
    } else {
        parts << QString::fromStdString(summary.source);
    }
    parts << QObject::tr("vocab %1").arg(formatGrouped(summary.vocab_size));
    if (readsRecords(summary.source)) {
        // Per part: the packed split cuts a document in two, so the parts' documents need not
        // add up to the corpus's, and one total would be off by that document.
        const bool pairs = readsPairs(data);
        record_parts << recordPartText(QObject::tr("train"), summary.train_documents, summary.train_tokens,
                                       summary.train_counted, pairs)
                     << recordPartText(QObject::tr("validation"), summary.val_documents, summary.val_tokens,
                                       summary.val_counted, pairs);
    } else {
        if (summary.train_tokens) parts << QObject::tr("%1 train tokens").arg(formatGrouped(*summary.train_tokens));
        else parts << QObject::tr("unbounded");
        if (summary.val_tokens) parts << QObject::tr("%1 validation").arg(formatGrouped(*summary.val_tokens));
    }
    QStringList tail;
    if (summary.tokens_per_byte)
        tail << QObject::tr("%1 tokens per byte").arg(QString::number(*summary.tokens_per_byte, 'f', 2));
    if (summary.entropy_floor_nats)
        tail << QObject::tr("loss floor %1 nats").arg(QString::number(*summary.entropy_floor_nats, 'f', 3));
    // The line wraps between parts only: "3,905 validation" stays together.
    parts += tail;
    for (QString& part : parts) part.replace(QLatin1Char(' '), QChar(0x00A0));
    // A record corpus's parts, three or four numbers each, read best as rows of their own.
    return (QStringList{parts.join(QStringLiteral(" · "))} + record_parts).join(QLatin1Char('\n'));
}

DataSummaryLine::DataSummaryLine(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("dataSummaryLine"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 4, 0, 0);
    layout->setSpacing(4);
    label_ = new QLabel(this);
    label_->setObjectName(QStringLiteral("dataSummaryLabel"));
    label_->setTextFormat(Qt::PlainText);
    label_->setWordWrap(true);
    label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(label_);

    auto* row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("dataSummaryProgress"));
    progress_->setRange(0, kProgressSteps);
    progress_->setTextVisible(true);
    progress_->hide();
    row->addWidget(progress_, 1);
    count_button_ = new QPushButton(tr("Count tokens"), this);
    count_button_->setObjectName(QStringLiteral("countTokensButton"));
    count_button_->setToolTip(tr("Read the whole corpus (and tokenise it, the first time) to count its tokens"));
    count_button_->hide();
    connect(count_button_, &QPushButton::clicked, this, [this] { describeNow(/*force=*/true); });
    row->addWidget(count_button_);
    row->addStretch(0);
    layout->addLayout(row);

    worker_ = new DataSummaryWorker(this);
    connect(worker_, &DataSummaryWorker::progress, this, &DataSummaryLine::onProgress);
    connect(worker_, &DataSummaryWorker::described, this, &DataSummaryLine::onDescribed);
    connect(worker_, &DataSummaryWorker::failed, this, &DataSummaryLine::onFailed);
    connect(worker_, &DataSummaryWorker::tooLarge, this, &DataSummaryLine::onTooLarge);

    settle_timer_.setSingleShot(true);
    settle_timer_.setInterval(kSettleMs);
    connect(&settle_timer_, &QTimer::timeout, this, [this] { describeNow(/*force=*/false); });
}

// The worker, a child, waits for a description in flight before it goes.
DataSummaryLine::~DataSummaryLine() = default;

void DataSummaryLine::setConfig(const RunConfig& config, bool valid) {
    const QString key = describedPart(config);
    if (key == key_ && valid == valid_) return;
    config_ = config;
    key_ = key;
    valid_ = valid;
    issue_.reset();
    summary_.reset();
    count_button_->hide();
    progress_->hide();
    setToolTip(QString());
    state_ = valid ? State::Waiting : State::Invalid;
    if (!valid) {
        settle_timer_.stop();
        showText(tr("The token counts follow once the config is valid."), QString::fromLatin1(kQuietColor));
        return;
    }
    showText(tr("Counting tokens…"), QString::fromLatin1(kQuietColor));
    settle_timer_.start();
}

QString DataSummaryLine::text() const {
    return label_->text();
}

bool DataSummaryLine::isBusy() const {
    return state_ == State::Waiting;
}

void DataSummaryLine::describeNow(bool force) {
    settle_timer_.stop();
    if (!valid_) return;
    count_button_->hide();
    state_ = State::Waiting;
    showText(force ? tr("Reading the whole corpus…") : tr("Counting tokens…"), QString::fromLatin1(kQuietColor));
    requested_key_ = key_;
    worker_->request(config_, force);
}

void DataSummaryLine::showText(const QString& text, const QString& color) {
    label_->setText(text);
    label_->setStyleSheet(color.isEmpty() ? QString() : QStringLiteral("color: %1;").arg(color));
}

void DataSummaryLine::onProgress(const QString& what, qint64 done, qint64 total) {
    if (requested_key_ != key_ || !isBusy()) return;
    const double fraction = total > 0 ? std::clamp(double(done) / double(total), 0.0, 1.0) : 1.0;
    progress_->setValue(static_cast<int>(fraction * kProgressSteps));
    progress_->setFormat(tr("%1 % of %2").arg(static_cast<int>(fraction * 100)).arg(formatBytes(total)));
    progress_->setVisible(done < total);
    showText(done < total ? tr("Tokenising %1, once: its tokens are cached for next time…").arg(what) : tr("Counting tokens…"),
             QString::fromLatin1(kQuietColor));
}

void DataSummaryLine::onDescribed(const DataSummary& summary) {
    if (requested_key_ != key_ || !valid_) return;  // for a config no longer shown
    progress_->hide();
    state_ = State::Described;
    summary_ = summary;
    const int64_t window = summary.seq_len + 1;
    QString tip;
    if (summary.train_windows) {
        tip = tr("Windows of train.seq_len + 1 = %1 tokens per epoch: %2 training, %3 validation")
                  .arg(formatGrouped(window))
                  .arg(formatGrouped(*summary.train_windows))
                  .arg(summary.val_windows ? formatGrouped(*summary.val_windows) : tr("none"));
    } else {
        tip = tr("An unbounded source: every window of %1 tokens is fresh").arg(formatGrouped(window));
    }
    if (readsPairs(config_.data) && summary.train_counted)
        tip += QLatin1Char('\n') + tr("Counted: the tokens the loss counts as targets, each completion's and its end "
                                      "token; a prompt's tokens are read as inputs only.");
    setToolTip(tip);
    showText(dataSummaryText(summary, config_.data), QString());
    Q_EMIT answered();
}

void DataSummaryLine::onFailed(const QString& field, const QString& message) {
    if (requested_key_ != key_ || !valid_) return;
    progress_->hide();
    state_ = State::Refused;
    issue_ = ConfigIssue{field.toStdString(), message.toStdString()};
    showText(message, QString::fromLatin1(kErrorColor));
    Q_EMIT issueChanged();
    Q_EMIT answered();
}

void DataSummaryLine::onTooLarge(const QString& field, qint64 limit) {
    if (requested_key_ != key_ || !valid_) return;
    progress_->hide();
    state_ = State::TooLarge;
    showText(tr("%1 holds more than %2: counting its tokens reads all of it.").arg(field, formatBytes(limit)),
             QString::fromLatin1(kQuietColor));
    count_button_->show();
    Q_EMIT answered();
}

}  // namespace trainbench::gui
