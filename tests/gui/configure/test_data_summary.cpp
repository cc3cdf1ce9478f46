// Tests the Configure view's data section: a text folder and a tokenizer chosen, the token counts described off the GUI thread.
#include <string>

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QProgressBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QPushButton>
#include <QUndoStack>

#include "handwritten_tokenizer.h"
#include "tiny_gui_config.h"
#include "widget_lookup.h"
#include "app/main_window.h"
#include "configure/config_form.h"
#include "configure/configure_view.h"
#include "configure/data_summary_line.h"
#include "configure/data_summary_worker.h"
#include "trainbench/config_io.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// Reading a few bytes is instant; a generous bound for a loaded machine, never a timing check.
constexpr int kDescribeTimeoutMs = 60000;

// Documents of the corpus below, through the hand-written tokenizer (ids 0-255 bytes, 256 "ab",
// 257 " ab", 258 <|endoftext|> closing each document):
//   a.txt "ab ab\n\nabc": "ab ab" -> 256 257 258, "abc" -> 256 99 258
//   b.txt "b a":           "b a"   -> 98 32 97 258
// 10 tokens from 11 bytes of text (the separator is not text). As bytes: 5+1, 3+1, 3+1 = 14.
// val.txt "ab": 256 258 (2 tokens; 3 as bytes) from 2 bytes.
constexpr int64_t kCorpusTokens = 10;

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    QVERIFY2(file.open(QIODevice::WriteOnly), qPrintable(path));
    QCOMPARE(file.write(bytes), bytes.size());
}

// The model is the GUI suites' tiny one with room for the tokenizer's 259 ids; windows of
// train.seq_len + 1 = 2 tokens, so the 2-token validation file holds one.
RunConfig baseConfig() {
    RunConfig config = tinyGuiConfig(3);
    config.model.vocab_size = 320;
    config.train.seq_len = 1;
    config.train.eval_every = 0;
    return config;
}

QLabel* summaryLabel(const QWidget& view) {
    return child<QLabel>(view, "dataSummaryLabel");
}

// The summary line's text with its no-break spaces (which keep each part on one line) as spaces.
QString plain(QString text) {
    return text.replace(QChar(0x00A0), QLatin1Char(' '));
}

QStringList listTexts(const QListWidget* list) {
    QStringList out;
    for (int i = 0; i < list->count(); ++i) out << list->item(i)->text();
    return out;
}

}  // namespace

class TestDataSummary : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void folderAndTokenizerReachTheWindowsConfig();
    void tokenCountsWithAValidationFile();
    void tokenCountsWithAHeldOutFraction();
    void bytesWithoutATokenizer();
    void refusalNamesTheField();
    void aCorpusTooLargeWaitsForTheUser();
    void destroyedWhileTokenising();
    void buttonsFollowTheLock();

private:
    QTemporaryDir dir_;
    QString corpus_;     // folder: a.txt, b.txt
    QString val_;        // val.txt
    QString tokenizer_;  // tokenizer.json
    QString cache_;      // TRAINBENCH_TOKEN_CACHE
};

void TestDataSummary::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    corpus_ = dir_.filePath(QStringLiteral("corpus"));
    QVERIFY(QDir().mkpath(corpus_));
    writeFile(corpus_ + QStringLiteral("/a.txt"), "ab ab\n\nabc");
    writeFile(corpus_ + QStringLiteral("/b.txt"), "b a");
    val_ = dir_.filePath(QStringLiteral("val.txt"));
    writeFile(val_, "ab");
    tokenizer_ = dir_.filePath(QStringLiteral("tokenizer.json"));
    writeFile(tokenizer_, QJsonDocument(handwrittenTokenizer()).toJson());
    qputenv("TRAINBENCH_STORE", dir_.filePath(QStringLiteral("store")).toLocal8Bit());
}

void TestDataSummary::init() {
    // A fresh token cache per test, so each one tokenises (and nothing reaches the user's).
    cache_ = dir_.filePath(QStringLiteral("cache-%1").arg(QString::fromLatin1(QTest::currentTestFunction())));
    QDir(cache_).removeRecursively();
    qputenv("TRAINBENCH_TOKEN_CACHE", cache_.toLocal8Bit());
}

// Both choices are undoable edits of the view's config, adopted by the window that starts runs.
void TestDataSummary::folderAndTokenizerReachTheWindowsConfig() {
    RunConfig config = baseConfig();
    config.data.val_path = val_.toStdString();
    MainWindow window(config, QStringLiteral("tiny"));
    ConfigureView* view = window.configureView();
    QCOMPARE(window.runConfig().data.source, std::string("markov"));

    QVERIFY(view->chooseDataPath(corpus_));
    // A synthetic source becomes text: a chosen folder is read as text.
    QCOMPARE(view->config().data.source, std::string("text"));
    QCOMPARE(view->config().data.path, corpus_.toStdString());
    QCOMPARE(window.runConfig().data.source, std::string("text"));
    QCOMPARE(window.runConfig().data.path, corpus_.toStdString());
    QCOMPARE(qobject_cast<QLineEdit*>(view->form()->editor(QStringLiteral("data.path")))->text(), corpus_);

    QVERIFY(view->chooseTokenizer(tokenizer_));
    QCOMPARE(window.runConfig().data.tokenizer, tokenizer_.toStdString());
    QCOMPARE(qobject_cast<QLineEdit*>(view->form()->editor(QStringLiteral("data.tokenizer")))->text(), tokenizer_);
    QCOMPARE(view->undoStack()->count(), 2);
    QVERIFY(view->isValid());

    QTRY_COMPARE_WITH_TIMEOUT(plain(summaryLabel(*view)->text()),
                              QStringLiteral("byte-level BPE · vocab 259 · 10 train tokens · 2 validation · 0.92 "
                                             "tokens per byte"),
                              kDescribeTimeoutMs);

    // "Bytes" clears the tokenizer; undo brings it back.
    QVERIFY(view->chooseTokenizer(QString()));
    QCOMPARE(window.runConfig().data.tokenizer, std::string());
    view->undoStack()->undo();
    QCOMPARE(window.runConfig().data.tokenizer, tokenizer_.toStdString());
    view->undoStack()->undo();
    view->undoStack()->undo();
    QCOMPARE(window.runConfig().data.source, std::string("markov"));
    QCOMPARE(window.runConfig().data.path, std::string());

    // The buttons beside the fields carry the choices as menus.
    auto* path_button = child<QPushButton>(*view, "dataPathButton");
    QVERIFY(path_button && path_button->menu());
    QCOMPARE(path_button->menu()->actions().size(), 2);
    auto* tokenizer_button = child<QPushButton>(*view, "tokenizerButton");
    QVERIFY(tokenizer_button && tokenizer_button->menu());
    QVERIFY(view->findChild<QAction*>(QStringLiteral("bytesTokenizerAction")));
    QVERIFY(view->findChild<QAction*>(QStringLiteral("chooseTokenizerAction")));
}

void TestDataSummary::tokenCountsWithAValidationFile() {
    RunConfig config = baseConfig();
    config.data.source = "text";
    config.data.path = corpus_.toStdString();
    config.data.val_path = val_.toStdString();
    config.data.tokenizer = tokenizer_.toStdString();
    ConfigureView view(config, QStringLiteral("text"));
    DataSummaryLine* line = view.dataSummaryLine();
    QVERIFY(line->isBusy());
    QSignalSpy answered(line, &DataSummaryLine::answered);
    QTRY_COMPARE_WITH_TIMEOUT(answered.count(), 1, kDescribeTimeoutMs);
    QVERIFY(line->summary().has_value());
    QCOMPARE(*line->summary()->train_tokens, kCorpusTokens);
    QCOMPARE(*line->summary()->val_tokens, int64_t(2));
    // (10 + 2) tokens from (11 + 2) bytes.
    QCOMPARE(plain(line->text()), QStringLiteral("byte-level BPE · vocab 259 · 10 train tokens · 2 validation · %1 tokens per "
                                          "byte")
                               .arg(QString::number(12.0 / 13.0, 'f', 2)));
    // Windows of 2 tokens: 5 in training, 1 in validation.
    QCOMPARE(line->toolTip(), QStringLiteral("Windows of train.seq_len + 1 = 2 tokens per epoch: 5 training, 1 validation"));
    QVERIFY(!line->issue());
    // Lines break between the parts only.
    QVERIFY(line->text().contains(QStringLiteral("10\u00A0train\u00A0tokens · 2\u00A0validation")));
    // The corpus is cached now, where the test said.
    QVERIFY(!QDir(cache_).entryList({QStringLiteral("*.tokens")}, QDir::Files).isEmpty());

    // An edit elsewhere (the model's width) describes nothing again.
    RunConfig wider = view.config();
    wider.model.dim = 48;
    view.replaceConfig(wider, QStringLiteral("text"), QStringLiteral("wider"));
    QVERIFY(!line->isBusy());
    QTest::qWait(DataSummaryLine::kSettleMs * 2);
    QCOMPARE(answered.count(), 1);
}

void TestDataSummary::tokenCountsWithAHeldOutFraction() {
    RunConfig config = baseConfig();
    config.data.source = "text";
    config.data.path = corpus_.toStdString();
    config.data.tokenizer = tokenizer_.toStdString();
    config.data.val_fraction = 0.5;
    ConfigureView view(config, QStringLiteral("text"));
    // The packed stream holds out by tokens: floor(10 x 0.5) = 5 of the 10, from 11 bytes.
    QTRY_COMPARE_WITH_TIMEOUT(plain(summaryLabel(view)->text()),
                              QStringLiteral("byte-level BPE · vocab 259 · 5 train tokens · 5 validation · %1 tokens per "
                                             "byte")
                                  .arg(QString::number(10.0 / 11.0, 'f', 2)),
                              kDescribeTimeoutMs);
    QCOMPARE(view.dataSummaryLine()->toolTip(),
             QStringLiteral("Windows of train.seq_len + 1 = 2 tokens per epoch: 2 training, 2 validation"));
}

void TestDataSummary::bytesWithoutATokenizer() {
    RunConfig config = baseConfig();
    config.data.val_path = val_.toStdString();
    ConfigureView view(config, QStringLiteral("tiny"));
    QVERIFY(view.chooseDataPath(corpus_));
    // 14 byte tokens (11 bytes and 3 document ends), 3 in validation ("ab" and its end), from 13 bytes.
    QTRY_COMPARE_WITH_TIMEOUT(
        plain(summaryLabel(view)->text()),
        QStringLiteral("bytes · vocab 256 · 14 train tokens · 3 validation · %1 tokens per byte").arg(QString::number(17.0 / 13.0, 'f', 2)),
        kDescribeTimeoutMs);
}

// describeData's refusal names model.vocab_size: marked on the form and in the issue list, in
// red, without making the config invalid; raising the field clears it.
void TestDataSummary::refusalNamesTheField() {
    RunConfig config = baseConfig();
    config.model.vocab_size = 258;  // one short of the tokenizer's 259 ids
    config.data.source = "text";
    config.data.path = corpus_.toStdString();
    config.data.val_path = val_.toStdString();
    config.data.tokenizer = tokenizer_.toStdString();
    ConfigureView view(config, QStringLiteral("text"));
    QVERIFY(view.isValid());  // validation cannot know the tokenizer's vocabulary
    DataSummaryLine* line = view.dataSummaryLine();
    QSignalSpy changed(line, &DataSummaryLine::issueChanged);
    QTRY_VERIFY_WITH_TIMEOUT(line->issue().has_value(), kDescribeTimeoutMs);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(line->issue()->path, std::string("model.vocab_size"));
    const QString message = QString::fromStdString(line->issue()->message);
    QVERIFY2(message.startsWith(QStringLiteral("model.vocab_size (258)")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("259")), qPrintable(message));
    QCOMPARE(plain(summaryLabel(view)->text()), message);
    QVERIFY2(summaryLabel(view)->styleSheet().contains(QStringLiteral("#b00020")), qPrintable(summaryLabel(view)->styleSheet()));
    QCOMPARE(view.form()->markedPaths(), QStringList{QStringLiteral("model.vocab_size")});
    QVERIFY(view.form()->editor(QStringLiteral("model.vocab_size"))->toolTip().startsWith(message));
    QCOMPARE(listTexts(child<QListWidget>(view, "configIssuesList")), QStringList{message});
    QVERIFY(child<QLabel>(view, "configIssuesSummary")->text().startsWith(QStringLiteral("The data cannot be read")));
    QVERIFY(view.isValid());

    RunConfig fixed = view.config();
    fixed.model.vocab_size = 259;
    view.replaceConfig(fixed, QStringLiteral("text"), QStringLiteral("fix"));
    // Forgotten at once; the new description follows.
    QVERIFY(!line->issue());
    QCOMPARE(view.form()->markedPaths(), QStringList());
    QTRY_COMPARE_WITH_TIMEOUT(plain(summaryLabel(view)->text()),
                              QStringLiteral("byte-level BPE · vocab 259 · 10 train tokens · 2 validation · 0.92 "
                                             "tokens per byte"),
                              kDescribeTimeoutMs);
    QCOMPARE(child<QListWidget>(view, "configIssuesList")->count(), 0);
    QCOMPARE(child<QLabel>(view, "configIssuesSummary")->text(), QStringLiteral("Valid: the workbench uses this config."));

    // A folder without text is refused naming data.path.
    const QString empty = dir_.filePath(QStringLiteral("empty"));
    QVERIFY(QDir().mkpath(empty));
    QVERIFY(view.chooseDataPath(empty));
    QTRY_VERIFY_WITH_TIMEOUT(line->issue().has_value(), kDescribeTimeoutMs);
    QCOMPARE(line->issue()->path, std::string("data.path"));
    QVERIFY2(line->text().startsWith(QStringLiteral("data.path (\"%1\")").arg(empty)), qPrintable(line->text()));
    QCOMPARE(view.form()->markedPaths(), QStringList{QStringLiteral("data.path")});
}

// A corpus over the automatic limit is measured, not read, until the user asks: a sparse file
// larger than the limit costs no disk.
void TestDataSummary::aCorpusTooLargeWaitsForTheUser() {
    const QString big = dir_.filePath(QStringLiteral("big.txt"));
    {
        QFile file(big);
        QVERIFY(file.open(QIODevice::WriteOnly));
        QVERIFY(file.resize(kAutoDescribeLimitBytes + 1));
    }
    RunConfig config = baseConfig();
    config.data.source = "text";
    config.data.path = big.toStdString();
    ConfigureView view(config, QStringLiteral("text"));
    QSignalSpy answered(view.dataSummaryLine(), &DataSummaryLine::answered);
    QTRY_COMPARE_WITH_TIMEOUT(answered.count(), 1, kDescribeTimeoutMs);
    QCOMPARE(plain(summaryLabel(view)->text()),
             QStringLiteral("data.path holds more than 512 MiB: counting its tokens reads all of it."));
    QVERIFY(!child<QPushButton>(view, "countTokensButton")->isHidden());
    QVERIFY(!view.dataSummaryLine()->summary());
    QVERIFY(!view.dataSummaryLine()->issue());
    QFile::remove(big);
}

// The view goes while the corpus is being tokenised: the description cannot be cancelled, so
// the view waits for it, and nothing it posts reaches the dead view.
void TestDataSummary::destroyedWhileTokenising() {
    const QString large = dir_.filePath(QStringLiteral("large"));
    QVERIFY(QDir().mkpath(large));
    QByteArray text;
    for (int i = 0; text.size() < (16 << 20); ++i) text += "ab ab abc b a " + QByteArray::number(i) + "\n";
    writeFile(large + QStringLiteral("/corpus.txt"), text);
    RunConfig config = baseConfig();
    config.data.source = "text";
    config.data.path = large.toStdString();
    config.data.tokenizer = tokenizer_.toStdString();
    {
        auto* view = new ConfigureView(config, QStringLiteral("large"));
        auto* progress = child<QProgressBar>(*view, "dataSummaryProgress");
        // The first progress report comes as tokenising starts (done 0 of the corpus).
        QTRY_VERIFY_WITH_TIMEOUT(!progress->isHidden(), kDescribeTimeoutMs);
        QVERIFY2(plain(summaryLabel(*view)->text()).startsWith(QStringLiteral("Tokenising data.path")),
                 qPrintable(plain(summaryLabel(*view)->text())));
        QVERIFY(progress->format().endsWith(QStringLiteral("of 16.0 MiB")));
        QVERIFY(view->dataSummaryLine()->isBusy());
        delete view;
    }
    // It finished before the view went: the corpus is cached.
    QCOMPARE(QDir(cache_).entryList({QStringLiteral("*.tokens")}, QDir::Files).size(), 1);
    QTest::qWait(50);  // queued calls of the dead view, if any, would run (and crash) here

    // Progress still reaches a new view (the process's one callback was not left dangling).
    ConfigureView again(baseConfig(), QStringLiteral("tiny"));
    QVERIFY(again.chooseDataPath(corpus_));
    QVERIFY(again.chooseTokenizer(tokenizer_));
    QTRY_COMPARE_WITH_TIMEOUT(again.dataSummaryLine()->summary().has_value(), true, kDescribeTimeoutMs);
    QCOMPARE(*again.dataSummaryLine()->summary()->train_tokens + *again.dataSummaryLine()->summary()->val_tokens,
             kCorpusTokens);
}

void TestDataSummary::buttonsFollowTheLock() {
    ConfigureView view(baseConfig(), QStringLiteral("tiny"));
    view.setLocked(true);
    QVERIFY(!child<QPushButton>(view, "dataPathButton")->isEnabled());
    QVERIFY(!child<QPushButton>(view, "tokenizerButton")->isEnabled());
    QVERIFY(!view.chooseDataPath(corpus_));
    QCOMPARE(view.config().data.path, std::string());
    view.setLocked(false);
    QVERIFY(child<QPushButton>(view, "dataPathButton")->isEnabled());
}

QTEST_MAIN(TestDataSummary)
#include "test_data_summary.moc"
