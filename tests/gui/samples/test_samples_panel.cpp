// Tests the Samples page on its own: stored sample events shown at their steps, the prompt apart from the text, and why Generate is off.
#include <string>
#include <vector>

#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>

#include "tiny_gui_config.h"
#include "widget_lookup.h"
#include "samples/generation_box.h"
#include "samples/sample_text.h"
#include "samples/sample_view.h"
#include "samples/samples_panel.h"
#include "trainbench/config_io.h"
#include "trainbench/event_kind.h"
#include "trainbench/run_sample.h"
#include "trainbench/run_store.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int kReadTimeoutMs = 30000;

// A sample event as the engine stores it (its message written by the engine's own encoder).
RunEvent sampleEvent(int64_t step, const std::string& prompt, const std::string& completion, bool ended) {
    RunSample sample;
    sample.step = step;
    sample.prompt = prompt;
    sample.completion = completion;
    sample.ended = ended;
    return RunEvent{step, 0.0, eventKindName(EventKind::Sample), sampleEventMessage(sample)};
}

RunEvent checkpointEvent(int64_t step) {
    return RunEvent{step, 0.0, eventKindName(EventKind::Checkpoint), "/nowhere/step-" + std::to_string(step)};
}

// The character format of the first run of `text` in `document`, found fragment by fragment.
QTextCharFormat formatOf(const QTextDocument& document, const QString& text, bool* found) {
    *found = false;
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it)
            if (it.fragment().text() == text) {
                *found = true;
                return it.fragment().charFormat();
            }
    return {};
}

// A run record with `config_json` in the store at `folder`.
void storeRun(const QString& folder, const std::string& run_id, const std::string& config_json) {
    RunStore store(folder.toStdString());
    RunRecord run;
    run.run_id = run_id;
    run.name = run_id;
    run.config_json = config_json;
    store.createRun(run);
    store.finishRun(run_id, "completed", 5, 1.0, "");
}

RunConfig textConfig() {
    RunConfig config = tinyGuiConfig(5);
    config.model.vocab_size = 256;
    config.data.source = "text";
    config.data.path = "/nonexistent/corpus.txt";  // Generate needs the tokenizer, not the corpus
    config.train.sample_every = 2;
    return config;
}

}  // namespace

class TestSamplesPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void samplesShowAtTheirStepsNewestFirst();
    void onePickedStepStaysPickedAsStepsArrive();
    void manyStepsShowTheNewestAndSayHowManyMore();
    void anotherRunStartsAfresh();
    void generateSaysWhyItIsOff();
    void promptsAreTheBoxsLines_data();
    void promptsAreTheBoxsLines();
    void controlCharactersShowAsPictures();

private:
    QTemporaryDir dir_;
    QString store_;
};

void TestSamplesPanel::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    store_ = dir_.filePath(QStringLiteral("store"));
}

void TestSamplesPanel::samplesShowAtTheirStepsNewestFirst() {
    SamplesPanel panel;
    QCOMPARE(panel.windowTitle(), QStringLiteral("Samples"));
    panel.addEvent(sampleEvent(10, "", "hello", /*ended=*/true));
    panel.addEvent(sampleEvent(10, "the c", "at", false));
    // Not samples: a status, and a sample whose message is not one (left to the event log).
    panel.addEvent(RunEvent{10, 0.0, eventKindName(EventKind::Status), "running"});
    panel.addEvent(RunEvent{15, 0.0, eventKindName(EventKind::Sample), "not json"});
    panel.addEvent(sampleEvent(20, "the c", "at sat\non", false));
    panel.flush();

    QCOMPARE(panel.sampleView()->log().count(), 3);
    QCOMPARE(panel.sampleView()->log().steps(), (std::vector<int64_t>{20, 10}));
    // The newest step on top; a step's samples in the order the run wrote them; the empty
    // prompt named; a newline in the text kept.
    QCOMPARE(panel.sampleView()->shownText(),
             QStringLiteral("Step 20\nthe cat sat\non\nStep 10\n(start of a document) hello (end of text)\nthe cat"));
    QCOMPARE(panel.windowTitle(), QStringLiteral("Samples (3)"));
    QCOMPARE(child<QLabel>(panel, "sampleCountLabel")->text(), QStringLiteral("3 samples at 2 steps"));

    // The prompt in grey bold, the model's text in the normal face.
    const QTextDocument& document = *child<QTextBrowser>(panel, "sampleText")->document();
    bool found = false;
    const QTextCharFormat prompt = formatOf(document, QStringLiteral("the c"), &found);
    QVERIFY(found);
    QCOMPARE(prompt.fontWeight(), int(QFont::Bold));
    QVERIFY(prompt.foreground().color() != QColor(Qt::black));
    const QTextCharFormat text = formatOf(document, QStringLiteral("at sat"), &found);
    QVERIFY(found);
    QVERIFY(text.fontWeight() != int(QFont::Bold));
    QVERIFY(!text.hasProperty(QTextFormat::ForegroundBrush));
    const QTextCharFormat start = formatOf(document, QStringLiteral("(start of a document) "), &found);
    QVERIFY(found);
    QVERIFY(start.fontItalic());
}

void TestSamplesPanel::onePickedStepStaysPickedAsStepsArrive() {
    SamplesPanel panel;
    panel.addEvent(sampleEvent(10, "a", "b", false));
    panel.addEvent(sampleEvent(20, "a", "c", false));
    panel.flush();
    auto* combo = child<QComboBox>(panel, "sampleStepCombo");
    QCOMPARE(combo->count(), 3);  // all, 20, 10
    QCOMPARE(combo->itemData(1).toLongLong(), 20);

    panel.sampleView()->pickStep(10);
    QCOMPARE(panel.sampleView()->shownText(), QStringLiteral("Step 10\nab"));
    // A live run's next step arrives: the pick stays, the picker offers the new step.
    panel.addEvent(sampleEvent(30, "a", "d", false));
    panel.flush();
    QCOMPARE(panel.sampleView()->shownText(), QStringLiteral("Step 10\nab"));
    QCOMPARE(combo->count(), 4);
    QCOMPARE(combo->currentData().toLongLong(), 10);
    panel.sampleView()->pickStep(-1);
    QCOMPARE(panel.sampleView()->shownText(), QStringLiteral("Step 30\nad\nStep 20\nac\nStep 10\nab"));
}

void TestSamplesPanel::manyStepsShowTheNewestAndSayHowManyMore() {
    SamplesPanel panel;
    const int steps = SampleView::kShownSteps + 5;
    for (int step = 1; step <= steps; ++step) panel.addEvent(sampleEvent(step, "p", "q", false));
    panel.flush();
    const QStringList lines = panel.sampleView()->shownText().split(QLatin1Char('\n'));
    QCOMPARE(lines.front(), QStringLiteral("Step %1").arg(steps));
    QCOMPARE(lines.count(QStringLiteral("pq")), SampleView::kShownSteps);
    QCOMPARE(lines.back(), QStringLiteral("… 5 steps before these: pick one under Step."));
    // The oldest is one pick away.
    panel.sampleView()->pickStep(1);
    QCOMPARE(panel.sampleView()->shownText(), QStringLiteral("Step 1\npq"));
}

void TestSamplesPanel::anotherRunStartsAfresh() {
    storeRun(store_, "fresh-a", runConfigToJson(textConfig()));
    SamplesPanel panel;
    panel.showRun(store_, QStringLiteral("fresh-a"));
    panel.addEvent(sampleEvent(2, "a", "b", false));
    panel.flush();
    QCOMPARE(panel.windowTitle(), QStringLiteral("Samples (1)"));
    panel.showRun(store_, QStringLiteral("fresh-b"));
    panel.flush();
    QCOMPARE(panel.runId(), QStringLiteral("fresh-b"));
    QCOMPARE(panel.sampleView()->log().count(), 0);
    QCOMPARE(panel.sampleView()->shownText(), QString());
    QCOMPARE(panel.windowTitle(), QStringLiteral("Samples"));
}

void TestSamplesPanel::generateSaysWhyItIsOff() {
    RunConfig markov = tinyGuiConfig(5);
    storeRun(store_, "markov-run", runConfigToJson(markov));
    storeRun(store_, "text-run", runConfigToJson(textConfig()));
    storeRun(store_, "broken-config", "{\"model\": {\"dimm\": 3}}");

    SamplesPanel panel;
    auto* button = child<QPushButton>(panel, "generateButton");
    auto* reason = child<QLabel>(panel, "generateReasonLabel");
    GenerationBox* box = panel.generationBox();
    QVERIFY(!button->isEnabled());
    QVERIFY2(reason->text().contains(QStringLiteral("No run shown")), qPrintable(reason->text()));
    QVERIFY(!box->generate());

    auto show = [&](const char* run_id) {
        QSignalSpy read(&panel, &SamplesPanel::runRead);
        panel.showRun(store_, QString::fromLatin1(run_id));
        QVERIFY(!button->isEnabled());  // until the record is read
        QVERIFY(read.wait(kReadTimeoutMs));
    };
    show("markov-run");
    QVERIFY(!button->isEnabled());
    QVERIFY2(reason->text().contains(QStringLiteral("data.source \"markov\"")), qPrintable(reason->text()));
    // A checkpoint does not give a Markov run a tokenizer.
    panel.addEvent(checkpointEvent(5));
    QVERIFY(!button->isEnabled());

    show("no-such-run");
    QVERIFY2(reason->text().contains(QStringLiteral("not in the run store")), qPrintable(reason->text()));

    show("broken-config");
    QVERIFY2(reason->text().contains(QStringLiteral("does not parse")), qPrintable(reason->text()));
    QVERIFY2(reason->text().contains(QStringLiteral("dimm")), qPrintable(reason->text()));

    show("text-run");
    QVERIFY(!button->isEnabled());
    QVERIFY2(reason->text().contains(QStringLiteral("No checkpoint yet")), qPrintable(reason->text()));
    // The run's checkpoint event (live, or replayed from the store) turns Generate on.
    panel.addEvent(checkpointEvent(4));
    QVERIFY(button->isEnabled());
    QVERIFY2(reason->text().contains(QStringLiteral("step 4")), qPrintable(reason->text()));
    QCOMPARE(box->whyOff(), QString());
    // An older checkpoint's event (a replay in step order never sends one) leaves the newest.
    panel.addEvent(checkpointEvent(2));
    QVERIFY2(reason->text().contains(QStringLiteral("step 4")), qPrintable(reason->text()));
}

void TestSamplesPanel::promptsAreTheBoxsLines_data() {
    QTest::addColumn<QString>("box");
    QTest::addColumn<QStringList>("prompts");
    QTest::newRow("empty box: one empty prompt, which the engine names") << QString() << QStringList{QString()};
    QTest::newRow("trailing newlines dropped") << QStringLiteral("a\nb\n\n") << QStringList{"a", "b"};
    QTest::newRow("an empty line inside stays prompt 2") << QStringLiteral("a\n\nb") << QStringList{"a", "", "b"};
    QTest::newRow("carriage returns dropped") << QStringLiteral("a\r\nb\r\n") << QStringList{"a", "b"};
    QTest::newRow("spaces are text") << QStringLiteral(" a \n") << QStringList{" a "};
}

void TestSamplesPanel::promptsAreTheBoxsLines() {
    QFETCH(QString, box);
    QFETCH(QStringList, prompts);
    QStringList got;
    for (const std::string& prompt : GenerationBox::promptsOf(box)) got << QString::fromStdString(prompt);
    QCOMPARE(got, prompts);
}

void TestSamplesPanel::controlCharactersShowAsPictures() {
    QCOMPARE(visibleText(QStringLiteral("a\tb\nc")), QStringLiteral("a\tb\nc"));
    QCOMPARE(visibleText(QString(QChar(0)) + QStringLiteral("x\r") + QChar(0x7f)),
             QString(QChar(0x2400)) + QStringLiteral("x") + QChar(0x240d) + QChar(0x2421));
}

QTEST_MAIN(TestSamplesPanel)
#include "test_samples_panel.moc"
