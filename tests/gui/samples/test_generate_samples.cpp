// Tests the Samples page in the window on a byte-text run: samples arrive as it trains, Generate writes what generateText writes, bad input shows the engine's message.
#include <memory>
#include <string>
#include <vector>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "tiny_gui_config.h"
#include "widget_lookup.h"
#include "app/main_window.h"
#include "monitor/monitor_view.h"
#include "monitor/run_dashboard.h"
#include "runs/engine_bridge.h"
#include "samples/generation_box.h"
#include "samples/sample_text.h"
#include "samples/sample_view.h"
#include "samples/samples_panel.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/event_kind.h"
#include "trainbench/run_sample.h"
#include "trainbench/run_store.h"
#include "trainbench/text_generation.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// Generous: the engine may still be building its first batch on a loaded two-core machine.
constexpr int kRunTimeoutMs = 180000;
constexpr int kGenerateTimeoutMs = 120000;
constexpr int64_t kSteps = 4;
constexpr int64_t kSampleTokens = 12;

// Bytes of text (model.vocab_size 256), a sample every 2 steps and at the end (steps 2 and 4),
// each of `prompts`, greedy; the final checkpoint at step 4.
RunConfig textRun(const QString& corpus, const std::string& prompts) {
    RunConfig config = tinyGuiConfig(kSteps);
    config.model.vocab_size = 256;
    config.data.source = "text";
    config.data.path = corpus.toStdString();
    config.train.sample_every = 2;
    config.train.sample_prompts = prompts;
    config.train.sample_tokens = kSampleTokens;
    return config;
}

// Trains `config` through the window's own controls, as Start does.
bool trainInWindow(MainWindow& window, const RunConfig& config) {
    if (!window.setRunConfig(config, QStringLiteral("text-run.json"))) return false;
    QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);
    if (!window.startRun()) return false;
    return finished.wait(kRunTimeoutMs) || finished.count() == 1;
}

// The samples the store holds for `run_id`, decoded by the engine.
std::vector<RunSample> storedSamples(const QString& store, const QString& run_id) {
    std::vector<RunSample> out;
    for (const RunEvent& event : RunStore(store.toStdString()).events(run_id.toStdString()))
        if (auto sample = sampleOfEvent(event)) out.push_back(*sample);
    return out;
}

// What the panel's log holds, oldest step first, as the store would list them.
std::vector<RunSample> panelSamples(const SamplesPanel& panel) {
    std::vector<RunSample> out;
    std::vector<int64_t> steps = panel.sampleView()->log().steps();
    for (auto it = steps.rbegin(); it != steps.rend(); ++it)
        for (const RunSample& sample : panel.sampleView()->log().at(*it)) out.push_back(sample);
    return out;
}

QStringList describe(const std::vector<RunSample>& samples) {
    QStringList out;
    for (const RunSample& sample : samples)
        out << QStringLiteral("%1|%2|%3|%4")
                   .arg(sample.step)
                   .arg(QString::fromStdString(sample.prompt), QString::fromStdString(sample.completion))
                   .arg(sample.ended);
    return out;
}

}  // namespace

class TestGenerateSamples : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void samplesArriveWhileTheRunTrains();
    void generateWritesWhatTheEngineWrites();
    void badInputShowsTheEnginesMessage_data();
    void badInputShowsTheEnginesMessage();
    void anotherRunShowsItsOwnSamples();
    void cleanupTestCase();

private:
    // Presses Generate and waits for its end; whether it wrote text.
    bool pressGenerate();

    QTemporaryDir dir_;
    QString store_;
    QString corpus_;
    std::unique_ptr<MainWindow> window_;
    SamplesPanel* panel_ = nullptr;
    QString run_id_;  // the window's own run, trained by the first test
};

void TestGenerateSamples::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    store_ = dir_.filePath(QStringLiteral("store"));
    // The window's runs are recorded in RunStore::defaultFolder(): this suite's store.
    qputenv("TRAINBENCH_STORE", store_.toLocal8Bit());
    corpus_ = dir_.filePath(QStringLiteral("corpus.txt"));
    QFile file(corpus_);
    QVERIFY(file.open(QIODevice::WriteOnly));
    for (int i = 0; i < 200; ++i) file.write(i % 2 ? "the cat sat on the mat\n\n" : "a dog ran in the park\n\n");
    file.close();

    window_ = std::make_unique<MainWindow>(textRun(corpus_, "the c\na d"), QStringLiteral("text-run.json"));
    window_->resize(1280, 800);
    window_->show();
    panel_ = window_->samplesPanel();
    QVERIFY(panel_);
}

void TestGenerateSamples::cleanupTestCase() { window_.reset(); }

void TestGenerateSamples::samplesArriveWhileTheRunTrains() {
    // Counted as they reach the page: while the run is live, not read back at its end.
    int live_samples = 0;
    connect(window_->dashboard(), &RunDashboard::eventShown, this, [&](const RunEvent& event) {
        if (event.kind == eventKindName(EventKind::Sample) && window_->bridge()->isLive()) ++live_samples;
    });
    QVERIFY(trainInWindow(*window_, textRun(corpus_, "the c\na d")));
    run_id_ = window_->bridge()->runId();
    QCOMPARE(panel_->runId(), run_id_);
    QVERIFY(live_samples > 0);
    panel_->flush();

    // Steps 2 and 4, each prompt: what the store holds, in its order.
    const std::vector<RunSample> stored = storedSamples(store_, run_id_);
    QCOMPARE(stored.size(), size_t(4));
    QCOMPARE(describe(panelSamples(*panel_)), describe(stored));
    QCOMPARE(panel_->sampleView()->log().steps(), (std::vector<int64_t>{4, 2}));
    const QString shown = panel_->sampleView()->shownText();
    QVERIFY2(shown.startsWith(QStringLiteral("Step 4\nthe c")), qPrintable(shown));
    // The page's tab counts them; the event log keeps its lines readable, no sample JSON.
    auto* pages = child<QTabWidget>(*window_, "trainingPages");
    QCOMPARE(pages->tabText(pages->indexOf(panel_)), QStringLiteral("Samples (4)"));
    const QString log = child<QPlainTextEdit>(*window_, "eventLog")->toPlainText();
    QVERIFY2(log.contains(QStringLiteral("checkpoint")), qPrintable(log));
    QVERIFY2(!log.contains(QStringLiteral("\"completion\"")), qPrintable(log));

    // The final checkpoint (step 4) turns Generate on once the run's record is read.
    QTRY_VERIFY_WITH_TIMEOUT(child<QPushButton>(*window_, "generateButton")->isEnabled(), kGenerateTimeoutMs);
}

bool TestGenerateSamples::pressGenerate() {
    auto* button = child<QPushButton>(*window_, "generateButton");
    QSignalSpy finished(panel_->generationBox(), &GenerationBox::finished);
    if (!button->isEnabled()) return false;
    QTest::mouseClick(button, Qt::LeftButton);
    // The GUI thread is free while the worker writes: the button says so at once.
    if (button->isEnabled() || !panel_->generationBox()->isGenerating()) return false;
    if (!finished.wait(kGenerateTimeoutMs) && finished.isEmpty()) return false;
    return finished.at(0).at(0).toBool();
}

void TestGenerateSamples::generateWritesWhatTheEngineWrites() {
    QVERIFY(!run_id_.isEmpty());
    window_->showTab(MainWindow::Tab::Samples);
    child<QPlainTextEdit>(*window_, "promptEdit")->setPlainText(QStringLiteral("the c\na d\n"));
    child<QSpinBox>(*window_, "maxNewTokensSpin")->setValue(int(kSampleTokens));
    child<QDoubleSpinBox>(*window_, "temperatureSpin")->setValue(0.0);
    child<QSpinBox>(*window_, "seedSpin")->setValue(7);
    auto* cache = child<QComboBox>(*window_, "cacheCombo");
    cache->setCurrentIndex(cache->findData(true));
    QVERIFY(pressGenerate());

    // The same request, asked of the engine directly: the run's stored config and its newest checkpoint.
    RunStore store(store_.toStdString());
    const std::optional<RunRecord> record = store.findRun(run_id_.toStdString());
    QVERIFY(record);
    TextGenerationRequest request;
    request.config = parseRunConfig(record->config_json);
    request.weights = checkpointOfStep(store.checkpointFolder(run_id_.toStdString()), 0).path;
    request.prompts = {"the c", "a d"};
    request.max_new_tokens = kSampleTokens;
    request.temperature = 0.0;
    request.seed = 7;
    const TextGeneration expected = generateText(request);
    QCOMPARE(expected.completions.size(), size_t(2));

    const std::optional<GenerationResult>& shown = panel_->generationBox()->shownResult();
    QVERIFY(shown);
    QCOMPARE(shown->checkpoint_step, kSteps);
    QCOMPARE(shown->generation.completions.size(), size_t(2));
    QStringList lines;
    for (size_t i = 0; i < 2; ++i) {
        const TextCompletion& want = expected.completions[i];
        QCOMPARE(shown->generation.completions[i].ids, want.ids);
        QVERIFY(!want.ids.empty());
        lines << QString::fromStdString(want.prompt) + visibleText(QString::fromStdString(want.text)) +
                     (want.ended ? QStringLiteral(" (end of text)") : QString());
    }
    // On screen: each prompt followed by what the model wrote, and the speeds it wrote them at.
    QCOMPARE(panel_->generationBox()->shownText(), lines.join(QLatin1Char('\n')));
    const QString status = panel_->generationBox()->statusText();
    QVERIFY2(status.contains(QStringLiteral("Step-4 checkpoint")) && status.contains(QStringLiteral("decode")),
             qPrintable(status));

    // Greedy with the run's own sample length: the run's last sample of each prompt (written
    // from the same weights as it ended) is what Generate writes.
    for (size_t i = 0; i < 2; ++i)
        QCOMPARE(QString::fromStdString(panel_->sampleView()->log().at(kSteps)[i].completion),
                 QString::fromStdString(expected.completions[i].text));
}

void TestGenerateSamples::badInputShowsTheEnginesMessage_data() {
    QTest::addColumn<QString>("prompts");
    QTest::addColumn<int>("max_new_tokens");
    QTest::addColumn<QString>("named");
    QTest::newRow("empty prompt box") << QString() << 8 << QStringLiteral("prompt 1 is empty");
    QTest::newRow("an empty second line") << QStringLiteral("the c\n\na d") << 8 << QStringLiteral("prompt 2 is empty");
    // tinyGuiConfig: model.max_seq_len 64; 5 prompt bytes and 63 new tokens pass it.
    QTest::newRow("too long for the model") << QStringLiteral("the c") << 63 << QStringLiteral("max_seq_len");
}

void TestGenerateSamples::badInputShowsTheEnginesMessage() {
    QFETCH(QString, prompts);
    QFETCH(int, max_new_tokens);
    QFETCH(QString, named);
    QVERIFY(!run_id_.isEmpty());
    child<QPlainTextEdit>(*window_, "promptEdit")->setPlainText(prompts);
    child<QSpinBox>(*window_, "maxNewTokensSpin")->setValue(max_new_tokens);
    QCOMPARE(child<QSpinBox>(*window_, "maxNewTokensSpin")->value(), max_new_tokens);
    QVERIFY(!pressGenerate());
    // The engine's message in the panel, in red, and no completions from before.
    const QString status = panel_->generationBox()->statusText();
    QVERIFY2(status.contains(named), qPrintable(status));
    QVERIFY2(status.startsWith(QStringLiteral("Not generated: ")), qPrintable(status));
    QVERIFY(child<QLabel>(*window_, "generationStatusLabel")->styleSheet().contains(QStringLiteral("#b00020")));
    QVERIFY(!panel_->generationBox()->shownResult());
    QCOMPARE(panel_->generationBox()->shownText(), QString());
    // The panel stays usable.
    QVERIFY(child<QPushButton>(*window_, "generateButton")->isEnabled());
}

void TestGenerateSamples::anotherRunShowsItsOwnSamples() {
    QVERIFY(!run_id_.isEmpty());
    // A second run, with another prompt, written as another process would (a bridge of its own).
    QString other_id;
    {
        EngineBridge bridge;
        QSignalSpy finished(&bridge, &EngineBridge::runFinished);
        QVERIFY(bridge.start(textRun(corpus_, "a dog"), QStringLiteral("other")));
        QVERIFY(finished.wait(kRunTimeoutMs) || finished.count() == 1);
        other_id = bridge.runId();
    }
    const std::vector<RunSample> other = storedSamples(store_, other_id);
    QCOMPARE(other.size(), size_t(2));

    // Watching it (a double-click in the runs list) shows its samples only, replayed from the store.
    QSignalSpy read(panel_, &SamplesPanel::runRead);
    QVERIFY(window_->watchRun(other_id));
    QCOMPARE(panel_->runId(), other_id);
    QTRY_COMPARE_WITH_TIMEOUT(panel_->sampleView()->log().count(), 2, kRunTimeoutMs);
    QCOMPARE(describe(panelSamples(*panel_)), describe(other));
    QVERIFY(read.count() == 1 || read.wait(kRunTimeoutMs));
    QTRY_VERIFY_WITH_TIMEOUT(child<QPushButton>(*window_, "generateButton")->isEnabled(), kRunTimeoutMs);

    // And the window's first run again: its four.
    QVERIFY(window_->watchRun(run_id_));
    QTRY_COMPARE_WITH_TIMEOUT(panel_->sampleView()->log().count(), 4, kRunTimeoutMs);
    QCOMPARE(describe(panelSamples(*panel_)), describe(storedSamples(store_, run_id_)));
}

QTEST_MAIN(TestGenerateSamples)
#include "test_generate_samples.moc"
