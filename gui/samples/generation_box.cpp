// GenerationBox: prompts, the sampling settings and Generate: a run's newest checkpoint continues each prompt, off the GUI thread.
#include "samples/generation_box.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStringList>
#include <QTextBrowser>
#include <QTextCursor>
#include <QVBoxLayout>

#include "common/display_format.h"
#include "samples/sample_text.h"
#include "trainbench/config_choices.h"

namespace trainbench::gui {

namespace {

const char* const kQuietColor = "#6b6b6b";
const char* const kErrorColor = "#b00020";
constexpr int kDefaultNewTokens = 64;

QString tokensPerSecond(double rate) {
    return std::isfinite(rate) && rate > 0 ? formatGrouped(std::llround(rate)) : missingValue();
}

}  // namespace

GenerationBox::GenerationBox(QWidget* parent) : QWidget(parent) {
    worker_ = new GenerationWorker(this);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(6);

    auto* prompt_label = new QLabel(tr("Prompts, one per line:"), this);
    prompt_edit_ = new QPlainTextEdit(this);
    prompt_edit_->setObjectName(QStringLiteral("promptEdit"));
    prompt_edit_->setPlaceholderText(tr("Once upon a time"));
    prompt_edit_->setTabChangesFocus(true);
    prompt_edit_->setLineWrapMode(QPlainTextEdit::NoWrap);
    // Four lines: a few prompts show whole, the completions keep the height.
    prompt_edit_->setFixedHeight(prompt_edit_->fontMetrics().lineSpacing() * 4 + 12);
    prompt_label->setBuddy(prompt_edit_);
    layout->addWidget(prompt_label);
    layout->addWidget(prompt_edit_);

    max_new_tokens_spin_ = new QSpinBox(this);
    max_new_tokens_spin_->setObjectName(QStringLiteral("maxNewTokensSpin"));
    max_new_tokens_spin_->setRange(1, 65536);
    max_new_tokens_spin_->setValue(kDefaultNewTokens);
    max_new_tokens_spin_->setToolTip(tr("At most this many tokens after each prompt; the prompt and these fit "
                                        "model.max_seq_len."));
    temperature_spin_ = new QDoubleSpinBox(this);
    temperature_spin_->setObjectName(QStringLiteral("temperatureSpin"));
    temperature_spin_->setRange(0.0, 10.0);
    temperature_spin_->setDecimals(2);
    temperature_spin_->setSingleStep(0.1);
    temperature_spin_->setValue(1.0);
    temperature_spin_->setSpecialValueText(tr("0 (greedy)"));
    temperature_spin_->setToolTip(tr("0 takes the likeliest token each time (the same text every time); higher "
                                     "flattens the distribution."));
    top_k_spin_ = new QSpinBox(this);
    top_k_spin_->setObjectName(QStringLiteral("topKSpin"));
    top_k_spin_->setRange(0, INT_MAX);
    top_k_spin_->setSpecialValueText(tr("all"));
    top_k_spin_->setToolTip(tr("Sample among the k likeliest tokens only (0: all)."));
    top_p_spin_ = new QDoubleSpinBox(this);
    top_p_spin_->setObjectName(QStringLiteral("topPSpin"));
    top_p_spin_->setRange(0.01, 1.0);
    top_p_spin_->setDecimals(2);
    top_p_spin_->setSingleStep(0.05);
    top_p_spin_->setValue(1.0);
    top_p_spin_->setToolTip(tr("Sample among the likeliest tokens that together hold this much probability (1: all)."));
    seed_spin_ = new QSpinBox(this);
    seed_spin_->setObjectName(QStringLiteral("seedSpin"));
    seed_spin_->setRange(0, INT_MAX);
    seed_spin_->setToolTip(tr("The same seed and settings write the same text."));
    cache_combo_ = new QComboBox(this);
    cache_combo_->setObjectName(QStringLiteral("cacheCombo"));
    cache_combo_->addItem(tr("absorbed"), true);
    cache_combo_->addItem(tr("naive"), false);
    cache_combo_->setItemData(0, tr("MLA's compressed cache: the latent and the rotary key per token, the up-projections "
                                    "folded into the query and the output"),
                              Qt::ToolTipRole);
    cache_combo_->setItemData(1, tr("Per-head keys and values, as plain attention keeps them"), Qt::ToolTipRole);
    cache_combo_->setToolTip(tr("How the attention cache is kept; both write the same text up to rounding."));

    auto* settings = new QGridLayout;
    settings->setHorizontalSpacing(8);
    settings->setVerticalSpacing(4);
    auto add = [&](int row, int column, const QString& name, QWidget* field) {
        auto* label = new QLabel(name, this);
        label->setBuddy(field);
        settings->addWidget(label, row, column * 2, Qt::AlignRight);
        settings->addWidget(field, row, column * 2 + 1);
    };
    add(0, 0, tr("Max new tokens:"), max_new_tokens_spin_);
    add(0, 1, tr("Temperature:"), temperature_spin_);
    add(1, 0, tr("Top-k:"), top_k_spin_);
    add(1, 1, tr("Top-p:"), top_p_spin_);
    add(2, 0, tr("Seed:"), seed_spin_);
    add(2, 1, tr("Cache:"), cache_combo_);
    settings->setColumnStretch(1, 1);
    settings->setColumnStretch(3, 1);
    layout->addLayout(settings);

    auto* action_row = new QHBoxLayout;
    action_row->setSpacing(8);
    generate_button_ = new QPushButton(tr("Generate"), this);
    generate_button_->setObjectName(QStringLiteral("generateButton"));
    reason_label_ = new QLabel(this);
    reason_label_->setObjectName(QStringLiteral("generateReasonLabel"));
    reason_label_->setWordWrap(true);
    reason_label_->setStyleSheet(QStringLiteral("color: %1;").arg(QLatin1String(kQuietColor)));
    action_row->addWidget(generate_button_, 0, Qt::AlignTop);
    action_row->addWidget(reason_label_, 1);
    layout->addLayout(action_row);

    status_label_ = new QLabel(this);
    status_label_->setObjectName(QStringLiteral("generationStatusLabel"));
    status_label_->setWordWrap(true);
    status_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_label_);

    text_ = new QTextBrowser(this);
    text_->setObjectName(QStringLiteral("generationText"));
    text_->setOpenLinks(false);
    text_->document()->setDocumentMargin(6);
    text_->setPlaceholderText(tr("The completions show here."));
    layout->addWidget(text_, 1);

    connect(generate_button_, &QPushButton::clicked, this, &GenerationBox::generate);
    connect(worker_, &GenerationWorker::generated, this, [this](const GenerationResult& result) {
        // Text of a run no longer shown would read as this one's.
        if (result.run_id != source_.run_id) {
            showStatus(QString(), false);
        } else {
            showResult(result);
        }
        updateGenerateButton();
        Q_EMIT finished(result.run_id == source_.run_id);
    });
    connect(worker_, &GenerationWorker::failed, this, [this](const QString& run_id, const QString& message) {
        if (run_id == source_.run_id) showError(message);
        else showStatus(QString(), false);
        updateGenerateButton();
        Q_EMIT finished(false);
    });
    updateGenerateButton();
}

void GenerationBox::setSource(GenerationSource source) {
    const bool another_run = source.run_id != source_.run_id;
    const bool config_arrived = source.config && !source_.config;
    source_ = std::move(source);
    if (another_run) {
        shown_.reset();
        text_->clear();
        showStatus(QString(), false);
    }
    if (config_arrived) {
        const RunConfig& config = *source_.config;
        // The prompt takes a token at least; the engine names the limit when a prompt is longer.
        max_new_tokens_spin_->setMaximum(static_cast<int>(std::clamp<int64_t>(config.model.max_seq_len - 1, 1, 65536)));
        top_k_spin_->setMaximum(static_cast<int>(std::clamp<int64_t>(config.model.vocab_size, 1, INT_MAX)));
        if (prompt_edit_->toPlainText().isEmpty())
            prompt_edit_->setPlainText(QString::fromStdString(config.train.sample_prompts));
    }
    updateGenerateButton();
}

QString GenerationBox::whyOff() const {
    if (source_.run_id.isEmpty())
        return tr("No run shown: start one, or watch a stored one (double-click it in the runs list of Compare).");
    if (!source_.problem.isEmpty()) return source_.problem;
    if (source_.reading || !source_.config) return tr("Reading run %1 from the store…").arg(source_.run_id);
    const RunConfig& config = *source_.config;
    if (!readsDocuments(config.data))
        return tr("This run trains on data.source \"%1\": only a run on text, jsonl or parquet has a tokenizer to "
                  "write prompts and completions with.")
            .arg(QString::fromStdString(config.data.source));
    if (source_.newest_checkpoint <= 0)
        return tr("No checkpoint yet: the run writes one every train.checkpoint_every steps and when it ends.");
    if (isGenerating()) return tr("Generating…");
    return QString();
}

void GenerationBox::updateGenerateButton() {
    const QString why = whyOff();
    generate_button_->setEnabled(why.isEmpty());
    reason_label_->setText(why.isEmpty() ? tr("Continues each prompt with the newest checkpoint (step %1).")
                                               .arg(source_.newest_checkpoint)
                                         : why);
}

std::vector<std::string> GenerationBox::promptsOf(const QString& text) {
    QStringList lines = text.split(QLatin1Char('\n'));
    for (QString& line : lines)
        if (line.endsWith(QLatin1Char('\r'))) line.chop(1);
    while (!lines.isEmpty() && lines.back().isEmpty()) lines.removeLast();
    std::vector<std::string> prompts;
    for (const QString& line : lines) prompts.push_back(line.toStdString());
    if (prompts.empty()) prompts.emplace_back();
    return prompts;
}

bool GenerationBox::generate() {
    if (!whyOff().isEmpty()) return false;
    GenerationParams params;
    params.run_id = source_.run_id;
    params.checkpoint_folder = source_.checkpoint_folder;
    TextGenerationRequest& request = params.request;
    request.config = *source_.config;
    request.prompts = promptsOf(prompt_edit_->toPlainText());
    request.max_new_tokens = max_new_tokens_spin_->value();
    request.temperature = temperature_spin_->value();
    request.top_k = top_k_spin_->value();
    request.top_p = top_p_spin_->value();
    request.seed = static_cast<uint64_t>(seed_spin_->value());
    request.absorbed_cache = cache_combo_->currentData().toBool();
    if (!worker_->start(std::move(params))) return false;
    showStatus(tr("Generating with the step-%1 checkpoint…").arg(source_.newest_checkpoint), false);
    updateGenerateButton();
    return true;
}

void GenerationBox::showResult(const GenerationResult& result) {
    shown_ = result;
    const TextGeneration& generation = result.generation;
    showStatus(tr("Step-%1 checkpoint · prefill %2 tokens/s · decode %3 tokens/s")
                   .arg(result.checkpoint_step)
                   .arg(tokensPerSecond(generation.prefill_tokens_per_s), tokensPerSecond(generation.decode_tokens_per_s)),
               false);
    status_label_->setToolTip(result.checkpoint);
    text_->clear();
    QTextCursor cursor(text_->document());
    for (const TextCompletion& completion : generation.completions)
        writeSample(cursor, QString::fromStdString(completion.prompt), QString::fromStdString(completion.text),
                    completion.ended);
    text_->moveCursor(QTextCursor::Start);
}

void GenerationBox::showError(const QString& message) {
    // The last completions came from other settings or prompts: they would read as an answer.
    shown_.reset();
    text_->clear();
    showStatus(tr("Not generated: %1").arg(message), true);
}

void GenerationBox::showStatus(const QString& text, bool error) {
    status_label_->setText(text);
    status_label_->setToolTip(QString());
    status_label_->setStyleSheet(error ? QStringLiteral("color: %1;").arg(QLatin1String(kErrorColor)) : QString());
    status_label_->setVisible(!text.isEmpty());
}

QString GenerationBox::shownText() const { return text_->toPlainText(); }

QString GenerationBox::statusText() const { return status_label_->text(); }

}  // namespace trainbench::gui
