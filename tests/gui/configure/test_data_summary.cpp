// Tests the Configure view's data section: a data file or folder and a tokenizer chosen (the source following the file), the rows each source reads, the token counts described off the GUI thread.
#include <string>

#include <QComboBox>
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
#include "configure/data_source_choice.h"
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

// The pairs file as prompt/completion records, the completion read from `completion`.
RunConfig pairsConfig(const QString& file, const std::string& completion = "completion") {
    RunConfig config = baseConfig();
    config.data.source = "jsonl";
    config.data.path = file.toStdString();
    config.data.prompt_field = "prompt";
    config.data.completion_field = completion;
    return config;
}

QLabel* summaryLabel(const QWidget& view) {
    return child<QLabel>(view, "dataSummaryLabel");
}

// The summary line's text with its no-break spaces (which keep each part on one line) as spaces.
QString plain(QString text) {
    return text.replace(QChar(0x00A0), QLatin1Char(' '));
}

// Whether the form shows the row of data.<key> (its editor, once the view is shown).
bool rowShown(const ConfigureView& view, const char* key) {
    QWidget* editor = view.form()->editor(QStringLiteral("data.") + QLatin1String(key));
    return editor && editor->isVisibleTo(&view);
}

// The data rows shown, of those that depend on the source.
QStringList sourceRows(const ConfigureView& view) {
    QStringList shown;
    for (const char* key : {"val_path", "val_fraction", "vocab_size", "order", "concentration", "seed", "layout",
                            "doc_separator", "tokenizer", "dtype", "text_field", "prompt_field", "completion_field",
                            "sources"})
        if (rowShown(view, key)) shown << QString::fromLatin1(key);
    return shown;
}

const QStringList kMarkovRows{"vocab_size", "order", "concentration", "seed"};
const QStringList kTextRows{"val_path", "val_fraction", "layout", "doc_separator", "tokenizer", "sources"};
const QStringList kRecordRows{"val_path", "val_fraction", "layout", "tokenizer", "text_field", "prompt_field",
                              "completion_field", "sources"};
const QStringList kTokenRows{"val_path", "val_fraction", "dtype"};

// Types `text` into the line edit of `path` in place of what it shows, as a user would.
void retypeLine(const ConfigureView& view, const char* path, const QString& text) {
    auto* edit = qobject_cast<QLineEdit*>(view.form()->editor(QString::fromLatin1(path)));
    QVERIFY2(edit, path);
    edit->selectAll();
    if (text.isEmpty()) QTest::keyClick(edit, Qt::Key_Delete);
    else QTest::keyClicks(edit, text);
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
    void aChosenPathSetsTheSource();
    void rowsFollowTheSource();
    void aRowWithAnIssueStaysShown();
    void pairsCountOnlyTheirTargets();
    void pairsHeldOutByDocuments();
    void aBadRecordNamesItsFileLineAndField();
    void aMixtureIsOneLineOfJson();

private:
    QTemporaryDir dir_;
    QString corpus_;     // folder: a.txt, b.txt
    QString val_;        // val.txt
    QString tokenizer_;  // tokenizer.json
    QString cache_;      // TRAINBENCH_TOKEN_CACHE
    QString pairs_;      // pairs.jsonl: three prompt/completion records
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
    // As bytes, each pair is its prompt's bytes (inputs only), its completion's and the end
    // byte 0 (targets):
    //   "ab" -> "c"      a b | c 0      4 tokens, 2 counted
    //   "x"  -> "yz"     x | y z 0      4 tokens, 3 counted
    //   "hello" -> ""    h e l l o | 0  6 tokens, 1 counted (the end alone)
    // 14 tokens, 6 counted, from 11 bytes of text.
    pairs_ = dir_.filePath(QStringLiteral("pairs.jsonl"));
    writeFile(pairs_, "{\"prompt\": \"ab\", \"completion\": \"c\"}\n"
                      "{\"prompt\": \"x\", \"completion\": \"yz\", \"id\": 2}\n"
                      "\n"
                      "{\"prompt\": \"hello\", \"completion\": \"\"}\n");
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

// A chosen file sets data.source by its name, a folder by the files it holds, each choice one
// undoable step with its path; the dialog's filters offer each kind.
void TestDataSummary::aChosenPathSetsTheSource() {
    const QString parquet = dir_.filePath(QStringLiteral("rows.parquet"));
    writeFile(parquet, "PAR1");
    const QString tokens = dir_.filePath(QStringLiteral("ids.bin"));
    writeFile(tokens, QByteArray(8, '\0'));
    const QString records = dir_.filePath(QStringLiteral("records"));
    QVERIFY(QDir().mkpath(records + QStringLiteral("/part")));
    writeFile(records + QStringLiteral("/part/0.jsonl.gz"), "");
    writeFile(records + QStringLiteral("/part/1.jsonl.zst"), "");
    writeFile(records + QStringLiteral("/README.md"), "about");
    const QString tables = dir_.filePath(QStringLiteral("tables"));
    QVERIFY(QDir().mkpath(tables + QStringLiteral("/.cache")));
    writeFile(tables + QStringLiteral("/a.parquet"), "PAR1");
    // A hidden folder is left out, as the engine leaves it out.
    writeFile(tables + QStringLiteral("/.cache/a.jsonl"), "");
    writeFile(tables + QStringLiteral("/.cache/b.jsonl"), "");

    MainWindow window(baseConfig(), QStringLiteral("tiny"));
    ConfigureView* view = window.configureView();
    const std::vector<std::pair<QString, std::string>> choices{
        {pairs_, "jsonl"}, {parquet, "parquet"}, {corpus_ + QStringLiteral("/a.txt"), "text"}, {tokens, "tokens"},
        {records, "jsonl"}, {tables, "parquet"}, {corpus_, "text"}};
    for (const auto& [path, source] : choices) {
        QVERIFY(view->chooseDataPath(path));
        QCOMPARE(view->config().data.source, source);
        QCOMPARE(view->config().data.path, path.toStdString());
    }
    QCOMPARE(window.runConfig().data.source, std::string("text"));
    QCOMPARE(view->undoStack()->count(), int(choices.size()));
    // Undo takes the source back with the path.
    view->undoStack()->undo();
    QCOMPARE(view->config().data.source, std::string("parquet"));
    QCOMPARE(view->config().data.path, tables.toStdString());
    for (size_t i = 1; i < choices.size(); ++i) view->undoStack()->undo();
    QCOMPARE(view->config().data.source, std::string("markov"));
    QCOMPARE(view->config().data.path, std::string());

    // Every ending the engine reads as JSON Lines, in any case.
    for (const char* name : {"a.jsonl", "a.JSONL", "a.jsonl.gz", "a.jsonl.zst", "a.ndjson"})
        QCOMPARE(dataSourceForPath(dir_.filePath(QString::fromLatin1(name)), "markov"), std::string("jsonl"));
    // A folder with as many of both keeps the record source in force.
    writeFile(tables + QStringLiteral("/b.jsonl"), "");
    QCOMPARE(dataSourceForPath(tables, "parquet"), std::string("parquet"));
    QCOMPARE(dataSourceForPath(tables, "jsonl"), std::string("jsonl"));
    QCOMPARE(dataSourceForPath(tables, "text"), std::string("jsonl"));
}

// The form shows what the source reads: the language's settings for markov, layout and
// tokenizer for the document sources, the record fields for jsonl and parquet only, dtype for
// tokens; the source and the path (with its Browse button) always. Undo brings the rows back
// with the source.
void TestDataSummary::rowsFollowTheSource() {
    ConfigureView view(baseConfig(), QStringLiteral("tiny"));
    QCOMPARE(sourceRows(view), kMarkovRows);
    QVERIFY(rowShown(view, "source") && rowShown(view, "path"));
    QVERIFY(child<QPushButton>(view, "dataPathButton")->isVisibleTo(&view));
    QVERIFY(!child<QPushButton>(view, "tokenizerButton")->isVisibleTo(&view));

    QVERIFY(view.chooseDataPath(pairs_));
    QCOMPARE(view.config().data.source, std::string("jsonl"));
    QCOMPARE(sourceRows(view), kRecordRows);
    QVERIFY(child<QPushButton>(view, "tokenizerButton")->isVisibleTo(&view));
    QCOMPARE(qobject_cast<QLineEdit*>(view.form()->editor(QStringLiteral("data.text_field")))->text(),
             QStringLiteral("text"));

    const QString parquet = dir_.filePath(QStringLiteral("rows.parquet"));
    writeFile(parquet, "PAR1");
    QVERIFY(view.chooseDataPath(parquet));
    QCOMPARE(sourceRows(view), kRecordRows);
    QVERIFY(view.chooseDataPath(corpus_));
    QCOMPARE(sourceRows(view), kTextRows);
    QVERIFY(rowShown(view, "source") && rowShown(view, "path"));

    // Typed in the form, the source is an edit like any other.
    auto* source = qobject_cast<QComboBox*>(view.form()->editor(QStringLiteral("data.source")));
    QVERIFY(source);
    source->activated(source->findText(QStringLiteral("parquet")));
    QCOMPARE(view.config().data.source, std::string("parquet"));
    QCOMPARE(sourceRows(view), kRecordRows);
    source->activated(source->findText(QStringLiteral("markov")));
    QCOMPARE(sourceRows(view), kMarkovRows);
    // Edits of one field in a row are one step, as typing is: undo goes back to text.
    view.undoStack()->undo();
    QCOMPARE(view.config().data.source, std::string("text"));
    QCOMPARE(sourceRows(view), kTextRows);
    view.undoStack()->undo();
    QCOMPARE(sourceRows(view), kRecordRows);
    view.undoStack()->undo();
    QCOMPARE(view.config().data.source, std::string("jsonl"));
    QCOMPARE(sourceRows(view), kRecordRows);
    view.undoStack()->undo();
    QCOMPARE(sourceRows(view), kMarkovRows);

    const QString tokens = dir_.filePath(QStringLiteral("ids.bin"));
    writeFile(tokens, QByteArray(8, '\0'));
    QVERIFY(view.chooseDataPath(tokens));
    QCOMPARE(sourceRows(view), kTokenRows);
}

// A field the source ignores but an issue names stays in sight, marked, to be cleared.
void TestDataSummary::aRowWithAnIssueStaysShown() {
    RunConfig config = baseConfig();
    config.data.source = "text";
    config.data.path = corpus_.toStdString();
    config.data.prompt_field = "prompt";
    ConfigureView view(config, QStringLiteral("text"));
    QVERIFY(!view.isValid());
    QCOMPARE(view.form()->markedPaths(), QStringList{QStringLiteral("data.prompt_field")});
    QVERIFY(rowShown(view, "prompt_field"));
    QVERIFY(!rowShown(view, "completion_field"));
    retypeLine(view, "data.prompt_field", QString());
    QCOMPARE(view.config().data.prompt_field, std::string());
    QVERIFY(view.isValid());
    QCOMPARE(sourceRows(view), kTextRows);
}

// Pairs as bytes, nothing held out: the line names the format, the pairs, their tokens and the
// targets counted (see initTestCase for the sums).
void TestDataSummary::pairsCountOnlyTheirTargets() {
    RunConfig config = baseConfig();
    config.data.prompt_field = "prompt";
    config.data.completion_field = "completion";
    config.data.val_fraction = 0;
    ConfigureView view(config, QStringLiteral("tiny"));
    QVERIFY(view.chooseDataPath(pairs_));
    QCOMPARE(view.config().data.source, std::string("jsonl"));
    QTRY_COMPARE_WITH_TIMEOUT(plain(summaryLabel(view)->text()),
                              QStringLiteral("JSON Lines · bytes · vocab 256 · %1 tokens per byte\n"
                                             "train: 3 pairs, 14 tokens, 6 counted\n"
                                             "validation: none")
                                  .arg(QString::number(14.0 / 11.0, 'f', 2)),
                              kDescribeTimeoutMs);
    const DataSummary& summary = *view.dataSummaryLine()->summary();
    QCOMPARE(*summary.train_documents, int64_t(3));
    QCOMPARE(*summary.train_counted, int64_t(6));
    QCOMPARE(*summary.val_tokens, int64_t(0));
    // A phrase keeps together; a narrow line wraps after a comma.
    QVERIFY(summaryLabel(view)->text().contains(QStringLiteral("train: 3\u00A0pairs, 14\u00A0tokens, 6\u00A0counted")));
    QVERIFY2(view.dataSummaryLine()->toolTip().contains(QStringLiteral("a prompt's tokens are read as inputs only")),
             qPrintable(view.dataSummaryLine()->toolTip()));

    // The same records read as documents of their "prompt" field: every token counts.
    RunConfig documents = view.config();
    documents.data.text_field = "prompt";
    documents.data.prompt_field.clear();
    documents.data.completion_field.clear();
    view.replaceConfig(documents, QStringLiteral("tiny"), QStringLiteral("documents"));
    // "ab", "x", "hello" and their ends: 3 + 2 + 6 tokens from 8 bytes.
    QTRY_COMPARE_WITH_TIMEOUT(plain(summaryLabel(view)->text()),
                              QStringLiteral("JSON Lines · bytes · vocab 256 · %1 tokens per byte\n"
                                             "train: 3 documents, 11 tokens\n"
                                             "validation: none")
                                  .arg(QString::number(11.0 / 8.0, 'f', 2)),
                              kDescribeTimeoutMs);
}

// Padded rows hold out whole documents: the last pair of three is the validation part.
void TestDataSummary::pairsHeldOutByDocuments() {
    RunConfig config = pairsConfig(pairs_);
    config.data.layout = "padded";
    config.data.val_fraction = 0.34;  // floor(3 x 0.34) = 1 document
    ConfigureView view(config, QStringLiteral("pairs"));
    QTRY_COMPARE_WITH_TIMEOUT(plain(summaryLabel(view)->text()),
                              QStringLiteral("JSON Lines · bytes · vocab 256 · %1 tokens per byte\n"
                                             "train: 2 pairs, 8 tokens, 5 counted\n"
                                             "validation: 1 pair, 6 tokens, 1 counted")
                                  .arg(QString::number(14.0 / 11.0, 'f', 2)),
                              kDescribeTimeoutMs);
}

// A record without the configured field is refused like any data error: in red on the line,
// naming the file, the line and the setting, which the form marks.
void TestDataSummary::aBadRecordNamesItsFileLineAndField() {
    RunConfig config = pairsConfig(pairs_, "answer");
    ConfigureView view(config, QStringLiteral("pairs"));
    DataSummaryLine* line = view.dataSummaryLine();
    QTRY_VERIFY_WITH_TIMEOUT(line->issue().has_value(), kDescribeTimeoutMs);
    QCOMPARE(line->issue()->path, std::string("data.completion_field"));
    const QString message = QString::fromStdString(line->issue()->message);
    for (const QString& part : {pairs_, QStringLiteral("line 1"), QStringLiteral("\"answer\"")})
        QVERIFY2(message.contains(part), qPrintable(message));
    QCOMPARE(plain(summaryLabel(view)->text()), message);
    QVERIFY(summaryLabel(view)->styleSheet().contains(QStringLiteral("#b00020")));
    QCOMPARE(view.form()->markedPaths(), QStringList{QStringLiteral("data.completion_field")});
    QVERIFY(rowShown(view, "completion_field"));
    QCOMPARE(listTexts(child<QListWidget>(view, "configIssuesList")), QStringList{message});

    retypeLine(view, "data.completion_field", QStringLiteral("completion"));
    QTRY_VERIFY_WITH_TIMEOUT(line->summary().has_value(), kDescribeTimeoutMs);
    QVERIFY(!line->issue());
    QCOMPARE(view.form()->markedPaths(), QStringList());
}

// data.sources: the form's editor holds the list's JSON on one line; the summary names each
// source with its share of the windows (3 : 1 -> 75 % and 25 %), and an edit of the line that
// adds an object adds a source to the config.
void TestDataSummary::aMixtureIsOneLineOfJson() {
    RunConfig config = baseConfig();
    config.data.source = "jsonl";
    config.data.prompt_field = "prompt";
    config.data.completion_field = "completion";
    config.data.layout = "padded";
    config.data.val_fraction = 0;
    config.train.eval_every = 0;
    config.data.sources = {{"qa", "", pairs_.toStdString(), 3, ""}, {"more", "", pairs_.toStdString(), 1, ""}};
    ConfigureView view(config, QStringLiteral("mixture"));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto* sources = qobject_cast<QLineEdit*>(view.form()->editor(QStringLiteral("data.sources")));
    QVERIFY(sources);
    const QString two = QStringLiteral("[{\"name\":\"qa\",\"path\":\"%1\",\"weight\":3},"
                                       "{\"name\":\"more\",\"path\":\"%1\",\"weight\":1}]")
                            .arg(pairs_);
    QCOMPARE(sources->text(), two);
    QSignalSpy answered(view.dataSummaryLine(), &DataSummaryLine::answered);
    QTRY_VERIFY_WITH_TIMEOUT(answered.count() >= 1 && view.dataSummaryLine()->summary(), kDescribeTimeoutMs);
    const QString text = plain(summaryLabel(view)->text());
    QVERIFY2(text.startsWith(QStringLiteral("mixture of qa 75 %, more 25 % · bytes · vocab 256")), qPrintable(text));
    // Both sources' pairs: 3 and 3 records, 14 tokens and 6 counted each.
    QVERIFY2(text.contains(QStringLiteral("train: 6 pairs, 28 tokens, 12 counted")), qPrintable(text));

    // Typed to the end: half an object waits, the closed list is one edit.
    sources->setFocus();
    sources->end(false);
    QTest::keyClick(sources, Qt::Key_Backspace);  // the closing bracket
    QTest::keyClicks(sources, QStringLiteral(", {\"path\": \"%1\", \"name\": \"third\"").arg(pairs_));
    QCOMPARE(view.config().data.sources.size(), size_t(2));
    QTest::keyClicks(sources, QStringLiteral("}]"));
    QTRY_COMPARE(view.config().data.sources.size(), size_t(3));
    QCOMPARE(view.config().data.sources[2].name, std::string("third"));
    QCOMPARE(view.config().data.sources[2].weight, 1.0);
}

QTEST_MAIN(TestDataSummary)
#include "test_data_summary.moc"
