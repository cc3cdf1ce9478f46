// SampleView: the samples a run wrote as it trained, newest step first or one step picked, each prompt apart from the model's text.
#include "samples/sample_view.h"

#include <algorithm>
#include <utility>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QVBoxLayout>

#include "samples/sample_text.h"

namespace trainbench::gui {

namespace {

constexpr int64_t kAllSteps = -1;
const char* const kQuietColor = "#6b6b6b";

// A paragraph of `text` in `format`, after what is there (the document's empty first one takes it).
void insertParagraph(QTextCursor& cursor, const QString& text, const QTextBlockFormat& block,
                     const QTextCharFormat& format) {
    if (cursor.atStart() && cursor.block().length() <= 1) cursor.setBlockFormat(block);
    else cursor.insertBlock(block);
    cursor.insertText(text, format);
}

QString counted(size_t count, const QString& one, const QString& many) {
    return QStringLiteral("%1 %2").arg(count).arg(count == 1 ? one : many);
}

}  // namespace

SampleView::SampleView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);

    auto* bar = new QHBoxLayout;
    bar->setSpacing(6);
    auto* step_label = new QLabel(tr("Step:"), this);
    step_combo_ = new QComboBox(this);
    step_combo_->setObjectName(QStringLiteral("sampleStepCombo"));
    step_combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    step_combo_->setToolTip(tr("Every step's samples, newest first, or one step's."));
    step_label->setBuddy(step_combo_);
    count_label_ = new QLabel(this);
    count_label_->setObjectName(QStringLiteral("sampleCountLabel"));
    count_label_->setStyleSheet(QStringLiteral("color: %1;").arg(QLatin1String(kQuietColor)));
    bar->addWidget(step_label);
    bar->addWidget(step_combo_);
    bar->addStretch(1);
    bar->addWidget(count_label_);
    layout->addLayout(bar);

    text_ = new QTextBrowser(this);
    text_->setObjectName(QStringLiteral("sampleText"));
    text_->setOpenLinks(false);
    text_->document()->setDocumentMargin(6);
    layout->addWidget(text_, 1);

    rewrite_timer_.setSingleShot(true);
    rewrite_timer_.setInterval(0);
    connect(&rewrite_timer_, &QTimer::timeout, this, &SampleView::rewrite);
    connect(step_combo_, &QComboBox::activated, this, [this] { rewrite(); });
    updateStepPicker();
}

void SampleView::add(RunSample sample) {
    log_.add(std::move(sample));
    rewrite_timer_.start();
}

void SampleView::clear() {
    log_.clear();
    rewrite_timer_.stop();
    rewrite();
}

void SampleView::setPlaceholder(const QString& text) { text_->setPlaceholderText(text); }

void SampleView::flush() {
    if (rewrite_timer_.isActive()) {
        rewrite_timer_.stop();
        rewrite();
    }
}

QString SampleView::shownText() const { return text_->toPlainText(); }

void SampleView::pickStep(int64_t step) {
    flush();
    const int index = step_combo_->findData(QVariant::fromValue<qlonglong>(step));
    if (index < 0) return;
    step_combo_->setCurrentIndex(index);
    rewrite();
}

int64_t SampleView::pickedStep() const {
    return step_combo_->currentIndex() < 0 ? kAllSteps : step_combo_->currentData().toLongLong();
}

void SampleView::updateStepPicker() {
    // The picked step stays picked as steps arrive; one that is gone (a new run) falls back to all.
    const int64_t picked = pickedStep();
    const QSignalBlocker quiet(step_combo_);
    step_combo_->clear();
    step_combo_->addItem(tr("All, newest first"), QVariant::fromValue<qlonglong>(kAllSteps));
    for (int64_t step : log_.steps()) step_combo_->addItem(QString::number(step), QVariant::fromValue<qlonglong>(step));
    const int index = step_combo_->findData(QVariant::fromValue<qlonglong>(picked));
    step_combo_->setCurrentIndex(std::max(index, 0));
    step_combo_->setEnabled(!log_.empty());
}

void SampleView::rewrite() {
    updateStepPicker();
    const std::vector<int64_t> steps = log_.steps();
    count_label_->setText(log_.empty() ? QString()
                                       : tr("%1 at %2").arg(counted(log_.count(), tr("sample"), tr("samples")),
                                                            counted(steps.size(), tr("step"), tr("steps"))));

    // Reading an older step further down stays where it was; at the top, the newest shows.
    const int scrolled = text_->verticalScrollBar()->value();
    text_->clear();
    if (log_.empty()) return;
    QTextCursor cursor(text_->document());
    QTextBlockFormat header_block;
    header_block.setTopMargin(10);
    header_block.setBottomMargin(2);
    QTextCharFormat header;
    header.setFontWeight(QFont::Bold);

    const int64_t picked = pickedStep();
    std::vector<int64_t> shown = picked == kAllSteps ? steps : std::vector<int64_t>{picked};
    const size_t hidden = shown.size() > kShownSteps ? shown.size() - kShownSteps : 0;
    shown.resize(shown.size() - hidden);
    for (int64_t step : shown) {
        insertParagraph(cursor, tr("Step %1").arg(step), header_block, header);
        for (const RunSample& sample : log_.at(step))
            writeSample(cursor, QString::fromStdString(sample.prompt), QString::fromStdString(sample.completion),
                        sample.ended);
    }
    if (hidden > 0) {
        QTextCharFormat quiet;
        quiet.setForeground(QColor(QString::fromLatin1(kQuietColor)));
        quiet.setFontItalic(true);
        insertParagraph(cursor,
                        tr("… %1 before these: pick one under Step.").arg(counted(hidden, tr("step"), tr("steps"))),
                        header_block, quiet);
    }
    text_->verticalScrollBar()->setValue(scrolled);
}

}  // namespace trainbench::gui
