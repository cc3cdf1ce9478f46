// Tests the Configure view: form and JSON in step both ways, the engine's issues on the exact fields, undo, presets.
#include <algorithm>
#include <set>
#include <string>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QUndoStack>
#include <QWheelEvent>

#include "widget_lookup.h"
#include "batch/batch_panel.h"
#include "configure/config_form.h"
#include "configure/config_json_view.h"
#include "configure/config_presets.h"
#include "configure/configure_view.h"
#include "runs/engine_bridge.h"
#include "configure/int64_spin_box.h"
#include "app/main_window.h"
#include "common/config_edit.h"
#include "common/display_format.h"
#include "trainbench/config_io.h"
#include "trainbench/param_count.h"
#include "trainbench/presets.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// configs/tiny.json: 8 routed experts in 2 groups, 2 of them per token, dim 64.
RunConfig tinyConfig() {
    return builtinTinyConfig();
}

Int64SpinBox* intEditor(const ConfigureView& view, const char* path) {
    return qobject_cast<Int64SpinBox*>(view.form()->editor(QString::fromLatin1(path)));
}

QLineEdit* lineEditor(const ConfigureView& view, const char* path) {
    return qobject_cast<QLineEdit*>(view.form()->editor(QString::fromLatin1(path)));
}

// Types `text` into an editor in place of what it shows, as a user would.
void retype(QWidget* editor, const QString& text) {
    if (auto* spin = qobject_cast<QAbstractSpinBox*>(editor)) spin->selectAll();
    if (auto* edit = qobject_cast<QLineEdit*>(editor)) edit->selectAll();
    QTest::keyClicks(editor, text);
}

QPlainTextEdit* jsonEdit(const ConfigureView& view) {
    return child<QPlainTextEdit>(view, "configJsonEdit");
}

// The JSON text with one `"key": old` replaced; fails the test when it is not there.
QString replacedInJson(const QString& json, const QString& from, const QString& to) {
    if (!json.contains(from)) qWarning("JSON has no %s", qPrintable(from));
    QString out = json;
    return out.replace(from, to);
}

QStringList messagesOf(const std::vector<ConfigIssue>& issues) {
    QStringList out;
    for (const ConfigIssue& issue : issues) out << QString::fromStdString(issue.message);
    return out;
}

QStringList listTexts(const QListWidget* list) {
    QStringList out;
    for (int i = 0; i < list->count(); ++i) out << list->item(i)->text();
    return out;
}

int presetIndex(const QString& file) {
    const QVector<ConfigPreset>& presets = configPresets();
    for (int i = 0; i < presets.size(); ++i)
        if (presets[i].file == file) return i;
    return -1;
}

}  // namespace

class TestConfigureView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void formFollowsSchema();
    void formEditRewritesJson();
    void floatKeepsFullPrecision();
    void jsonEditUpdatesForm();
    void invalidJsonKeepsLastGoodConfig();
    void validationMarksTheNamedField();
    void undoRedoRestoresValues();
    void consecutiveEditsOfOneFieldMerge();
    void wheelChangesOnlyTheFocusedField();
    void presetsLoadAndUndo();
    void anOpenedFileIsNamedInThePresetBox();
    void inferenceFieldsHaveAGroupOfTheirOwn();
    void maxBatchSizeEditRoundTrips();
    void samplePromptsAreLinesThatRoundTrip();
    void savedFileOpensAsTheSameConfig();
    void windowAdoptsValidEditsOnly();
    void publishedPresetDrivesTheSidePanel();
    void startRefusesInvalidConfigWithEngineMessage();
    void batchSplitIsAnUndoableStep();
    void editMenuUndoesFormEdits();
};

void TestConfigureView::initTestCase() {
    // Nothing here may touch the user's settings.
    QStandardPaths::setTestModeEnabled(true);
}

void TestConfigureView::formFollowsSchema() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    QCOMPARE(view.form()->sections(),
             (QStringList{QStringLiteral("model"), QStringLiteral("train"), QStringLiteral("data"),
                          QStringLiteral("runtime"), QStringLiteral("target")}));
    for (const ConfigFieldInfo& info : configSchema()) {
        const QString path = QString::fromStdString(info.section + "." + info.key);
        QWidget* editor = view.form()->editor(path);
        QVERIFY2(editor, qPrintable(path));
        QCOMPARE(editor->toolTip(), QString::fromStdString(info.help));
    }
    QVERIFY(intEditor(view, "model.dim"));
    QCOMPARE(intEditor(view, "model.dim")->value(), 64);
    QVERIFY(lineEditor(view, "train.lr"));
    QCOMPARE(lineEditor(view, "train.lr")->text(), QStringLiteral("0.003"));
    auto* schedule = qobject_cast<QComboBox*>(view.form()->editor(QStringLiteral("train.schedule")));
    QVERIFY(schedule);
    QCOMPARE(schedule->currentText(), QStringLiteral("cosine"));
    QCOMPARE(schedule->count(), 3);
    // The data section's separator is two newlines, written as escapes on one line.
    QCOMPARE(lineEditor(view, "data.doc_separator")->text(), QStringLiteral("\\n\\n"));
    // An unset optional field shows as empty, not as 0.
    QCOMPARE(lineEditor(view, "train.global_batch_size")->text(), QString());
    QVERIFY(view.isValid());
    QCOMPARE(view.form()->markedPaths(), QStringList());
}

void TestConfigureView::formEditRewritesJson() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    QSignalSpy edited(&view, &ConfigureView::configEdited);
    retype(intEditor(view, "model.dim"), QStringLiteral("96"));

    QCOMPARE(view.config().model.dim, 96);
    QVERIFY2(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"dim\": 96")),
             qPrintable(jsonEdit(view)->toPlainText()));
    QCOMPARE(jsonEdit(view)->toPlainText(), QString::fromStdString(runConfigToJson(view.config())));
    QVERIFY(edited.count() >= 1);
    QCOMPARE(edited.last().at(0).value<RunConfig>().model.dim, 96);

    auto* schedule = qobject_cast<QComboBox*>(view.form()->editor(QStringLiteral("train.schedule")));
    schedule->setCurrentIndex(schedule->findText(QStringLiteral("linear")));
    Q_EMIT schedule->activated(schedule->currentIndex());
    QCOMPARE(view.config().train.schedule, std::string("linear"));
    QVERIFY(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"schedule\": \"linear\"")));

    auto* sync = qobject_cast<QCheckBox*>(view.form()->editor(QStringLiteral("train.sync_each_micro_batch")));
    QVERIFY(sync);
    QVERIFY(!sync->isChecked());
    sync->click();
    QCOMPARE(view.config().train.sync_each_micro_batch, true);
    QVERIFY(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"sync_each_micro_batch\": true")));

    retype(lineEditor(view, "train.global_batch_size"), QStringLiteral("16"));
    QVERIFY(view.config().train.global_batch_size.has_value());
    QCOMPARE(*view.config().train.global_batch_size, 16);
    lineEditor(view, "train.global_batch_size")->selectAll();
    QTest::keyClick(lineEditor(view, "train.global_batch_size"), Qt::Key_Delete);
    QVERIFY(!view.config().train.global_batch_size.has_value());
    QVERIFY(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"global_batch_size\": null")));
}

void TestConfigureView::floatKeepsFullPrecision() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    QLineEdit* lr = lineEditor(view, "train.lr");
    retype(lr, QStringLiteral("6e-4"));
    QCOMPARE(view.config().train.lr, 6e-4);
    // What the user typed stays; the JSON has the same number, every digit kept.
    QCOMPARE(lr->text(), QStringLiteral("6e-4"));
    QCOMPARE(parseRunConfig(jsonEdit(view)->toPlainText().toStdString()).train.lr, 6e-4);

    retype(lr, QStringLiteral("0.000123456789012345"));
    QCOMPARE(view.config().train.lr, 0.000123456789012345);
    QCOMPARE(parseRunConfig(jsonEdit(view)->toPlainText().toStdString()).train.lr, 0.000123456789012345);

    // A value arriving from elsewhere is shown in its shortest exact form.
    RunConfig config = tinyConfig();
    config.train.min_lr = 6e-5;
    view.resetConfig(config, QStringLiteral("tiny"));
    QCOMPARE(lineEditor(view, "train.min_lr")->text(), QStringLiteral("6e-05"));
}

void TestConfigureView::jsonEditUpdatesForm() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    QSignalSpy parsed(view.jsonView(), &ConfigJsonView::configParsed);
    const QString json = jsonEdit(view)->toPlainText();
    jsonEdit(view)->setPlainText(replacedInJson(json, QStringLiteral("\"n_layers\": 2"), QStringLiteral("\"n_layers\": 5")));

    // Debounced: nothing is parsed at once.
    QCOMPARE(parsed.count(), 0);
    QCOMPARE(intEditor(view, "model.n_layers")->value(), 2);
    QTRY_COMPARE(intEditor(view, "model.n_layers")->value(), 5);
    QCOMPARE(parsed.count(), 1);
    QCOMPARE(view.config().model.n_layers, 5);
    QCOMPARE(view.undoStack()->count(), 1);
    QVERIFY(view.jsonError().isEmpty());

    // Two quick edits are parsed once, as the second.
    jsonEdit(view)->setPlainText(replacedInJson(jsonEdit(view)->toPlainText(), QStringLiteral("\"steps\": 150"),
                                                QStringLiteral("\"steps\": 151")));
    jsonEdit(view)->setPlainText(replacedInJson(jsonEdit(view)->toPlainText(), QStringLiteral("\"steps\": 151"),
                                                QStringLiteral("\"steps\": 152")));
    QTRY_COMPARE(intEditor(view, "train.steps")->value(), 152);
    QCOMPARE(parsed.count(), 2);
    QCOMPARE(view.undoStack()->count(), 2);
}

void TestConfigureView::invalidJsonKeepsLastGoodConfig() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    retype(intEditor(view, "model.dim"), QStringLiteral("80"));
    QCOMPARE(view.config().model.dim, 80);
    const int commands = view.undoStack()->count();

    // A syntax error.
    const QString good = jsonEdit(view)->toPlainText();
    jsonEdit(view)->setPlainText(replacedInJson(good, QStringLiteral("\"dim\": 80"), QStringLiteral("\"dim\": ")));
    QTRY_VERIFY(!view.jsonError().isEmpty());
    QCOMPARE(view.config().model.dim, 80);
    QCOMPARE(intEditor(view, "model.dim")->value(), 80);
    QCOMPARE(view.undoStack()->count(), commands);
    QVERIFY(!view.isValid());
    auto* status = child<QLabel>(view, "configJsonStatus");
    QVERIFY2(status->text().contains(view.jsonError()), qPrintable(status->text()));
    // The broken text stays for the user to fix.
    QVERIFY(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"dim\": ,")));

    // A type error: the engine's reader names the field.
    jsonEdit(view)->setPlainText(replacedInJson(good, QStringLiteral("\"dim\": 80"), QStringLiteral("\"dim\": \"wide\"")));
    QTRY_VERIFY(view.jsonError().contains(QStringLiteral("model.dim")));
    QCOMPARE(view.config().model.dim, 80);
    QCOMPARE(intEditor(view, "model.dim")->value(), 80);

    // Fixed: taken, error gone.
    jsonEdit(view)->setPlainText(replacedInJson(good, QStringLiteral("\"dim\": 80"), QStringLiteral("\"dim\": 72")));
    QTRY_COMPARE(intEditor(view, "model.dim")->value(), 72);
    QVERIFY(view.jsonError().isEmpty());
    QVERIFY(view.isValid());
}

void TestConfigureView::validationMarksTheNamedField() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    QCOMPARE(view.config().model.n_routed_experts, 8);
    retype(intEditor(view, "model.n_activated_experts"), QStringLiteral("9"));
    QCOMPARE(view.config().model.n_activated_experts, 9);

    // The engine's own verdict on the same config, computed apart from the view.
    RunConfig expected_config = tinyConfig();
    expected_config.model.n_activated_experts = 9;
    const std::vector<ConfigIssue> expected = validateRunConfig(expected_config);
    QVERIFY(!expected.empty());
    std::set<std::string> expected_paths;
    for (const ConfigIssue& issue : expected) expected_paths.insert(issue.path);
    QCOMPARE(expected_paths, std::set<std::string>{"model.n_activated_experts"});

    QCOMPARE(view.form()->markedPaths(), QStringList{QStringLiteral("model.n_activated_experts")});
    QWidget* marked = view.form()->editor(QStringLiteral("model.n_activated_experts"));
    QCOMPARE(marked->property(ConfigForm::kIssueProperty).toBool(), true);
    QVERIFY(marked->toolTip().startsWith(QString::fromStdString(expected.front().message)));
    QCOMPARE(view.form()->editor(QStringLiteral("model.n_routed_experts"))->property(ConfigForm::kIssueProperty).toBool(),
             false);
    QCOMPARE(listTexts(child<QListWidget>(view, "configIssuesList")), messagesOf(expected));
    QVERIFY(child<QListWidget>(view, "configIssuesList")->item(0)->text().contains(
        QStringLiteral("must be <= model.n_routed_experts (8)")));
    QVERIFY(!view.isValid());

    // Fixing the other side of the rule clears the mark.
    retype(intEditor(view, "model.n_routed_experts"), QStringLiteral("16"));
    const std::vector<ConfigIssue> remaining = validateRunConfig(view.config());
    QCOMPARE(listTexts(child<QListWidget>(view, "configIssuesList")), messagesOf(remaining));
    retype(intEditor(view, "model.n_activated_experts"), QStringLiteral("2"));
    QVERIFY(view.isValid());
    QCOMPARE(view.form()->markedPaths(), QStringList());
    QCOMPARE(marked->property(ConfigForm::kIssueProperty).toBool(), false);
    QCOMPARE(marked->toolTip(), QStringLiteral("Routed experts chosen per token (top-k)"));
    QCOMPARE(child<QListWidget>(view, "configIssuesList")->count(), 0);
}

void TestConfigureView::undoRedoRestoresValues() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    retype(intEditor(view, "model.dim"), QStringLiteral("96"));
    retype(lineEditor(view, "train.lr"), QStringLiteral("0.01"));
    QCOMPARE(view.undoStack()->count(), 2);

    view.undoStack()->undo();
    QCOMPARE(view.config().train.lr, 0.003);
    QCOMPARE(lineEditor(view, "train.lr")->text(), QStringLiteral("0.003"));
    QCOMPARE(view.config().model.dim, 96);
    view.undoStack()->undo();
    QCOMPARE(view.config().model.dim, 64);
    QCOMPARE(intEditor(view, "model.dim")->value(), 64);
    QVERIFY(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"dim\": 64")));

    view.undoStack()->redo();
    QCOMPARE(view.config().model.dim, 96);
    QCOMPARE(intEditor(view, "model.dim")->value(), 96);
    view.undoStack()->redo();
    QCOMPARE(view.config().train.lr, 0.01);
    QCOMPARE(lineEditor(view, "train.lr")->text(), QStringLiteral("0.01"));
    QCOMPARE(jsonEdit(view)->toPlainText(), QString::fromStdString(runConfigToJson(view.config())));

    // Undoing a JSON edit restores the text as well.
    jsonEdit(view)->setPlainText(replacedInJson(jsonEdit(view)->toPlainText(), QStringLiteral("\"seq_len\": 64"),
                                                QStringLiteral("\"seq_len\": 32")));
    QTRY_COMPARE(view.config().train.seq_len, 32);
    view.undoStack()->undo();
    QCOMPARE(view.config().train.seq_len, 64);
    QVERIFY(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"seq_len\": 64")));
    QCOMPARE(intEditor(view, "train.seq_len")->value(), 64);
}

void TestConfigureView::consecutiveEditsOfOneFieldMerge() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    // "1", "12", "128": three edits of one field, one step back.
    retype(intEditor(view, "train.steps"), QStringLiteral("128"));
    QCOMPARE(view.config().train.steps, 128);
    QCOMPARE(view.undoStack()->count(), 1);
    intEditor(view, "train.steps")->stepBy(1);
    QCOMPARE(view.config().train.steps, 129);
    QCOMPARE(view.undoStack()->count(), 1);
    retype(intEditor(view, "train.seed"), QStringLiteral("7"));
    QCOMPARE(view.undoStack()->count(), 2);
    view.undoStack()->undo();
    view.undoStack()->undo();
    QCOMPARE(view.config().train.steps, 150);
    QCOMPARE(view.config().train.seed, 0);

    // Typing the value back to where it started leaves nothing to undo.
    ConfigureView again(tinyConfig(), QStringLiteral("tiny"));
    retype(intEditor(again, "train.steps"), QStringLiteral("15"));
    QTest::keyClick(intEditor(again, "train.steps"), Qt::Key_0);
    QCOMPARE(again.config().train.steps, 150);
    QCOMPARE(again.undoStack()->count(), 0);
}

void TestConfigureView::wheelChangesOnlyTheFocusedField() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    Int64SpinBox* dim = intEditor(view, "model.dim");
    auto* schedule = qobject_cast<QComboBox*>(view.form()->editor(QStringLiteral("train.schedule")));
    auto wheelUp = [](QWidget* target) {
        const QPointF centre(target->width() / 2.0, target->height() / 2.0);
        QWheelEvent event(centre, target->mapToGlobal(centre), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                          Qt::NoScrollPhase, false);
        QCoreApplication::sendEvent(target, &event);
    };
    // Scrolling the form past the fields leaves them alone.
    wheelUp(dim);
    wheelUp(schedule);
    QCOMPARE(view.config().model.dim, 64);
    QCOMPARE(view.config().train.schedule, std::string("cosine"));
    QCOMPARE(view.undoStack()->count(), 0);

    view.activateWindow();
    dim->setFocus();
    QTRY_VERIFY(dim->hasFocus());
    wheelUp(dim);
    QCOMPARE(view.config().model.dim, 65);
    QCOMPARE(view.undoStack()->count(), 1);
}

void TestConfigureView::presetsLoadAndUndo() {
    // Every preset is compiled in and parses.
    QCOMPARE(configPresets().size(), 8);
    for (const ConfigPreset& preset : configPresets()) {
        try {
            loadConfigPreset(preset);
        } catch (const std::exception& error) {
            QFAIL(qPrintable(preset.file + QStringLiteral(": ") + QString::fromStdString(error.what())));
        }
    }
    // The built-in tiny preset of the engine and the file compiled into the workbench agree.
    QCOMPARE(runConfigToJson(loadConfigPreset(configPresets()[presetIndex(QStringLiteral("configs/tiny.json"))])),
             runConfigToJson(builtinTinyConfig()));

    ConfigureView view(tinyConfig(), QStringLiteral("tiny.json"));
    auto* combo = child<QComboBox>(view, "presetCombo");
    auto* load = child<QPushButton>(view, "loadPresetButton");
    // A config that is no preset: the box names it first, and Load has nothing to load for it.
    QCOMPARE(combo->count(), 9);
    QCOMPARE(combo->currentText(), QStringLiteral("tiny.json (open file)"));
    QVERIFY(!load->isEnabled());
    combo->setCurrentIndex(combo->findData(QStringLiteral("configs/small.json")));
    QVERIFY(load->isEnabled());
    QTest::mouseClick(load, Qt::LeftButton);
    // Once a preset is chosen the box shows it, and the shown config's entry is gone.
    QCOMPARE(combo->count(), 8);
    QCOMPARE(combo->currentIndex(), presetIndex(QStringLiteral("configs/small.json")));
    // configs/small.json: dim 512, 8 layers, 16 routed experts.
    QCOMPARE(view.config().model.dim, 512);
    QCOMPARE(view.config().model.n_layers, 8);
    QCOMPARE(view.config().model.n_routed_experts, 16);
    QCOMPARE(intEditor(view, "model.dim")->value(), 512);
    QCOMPARE(view.configName(), QStringLiteral("configs/small.json"));
    QCOMPARE(view.undoStack()->count(), 1);

    // The published DeepSeek-V3 config: dim 7168, 61 layers, 256 routed experts, 8 per token.
    QVERIFY(view.loadPreset(presetIndex(QStringLiteral("configs/deepseek/config_671B.json"))));
    QCOMPARE(view.config().model.dim, 7168);
    QCOMPARE(view.config().model.n_layers, 61);
    QCOMPARE(view.config().model.n_routed_experts, 256);
    QCOMPARE(view.config().model.n_activated_experts, 8);
    QCOMPARE(intEditor(view, "model.n_layers")->value(), 61);
    // DeepSeek-V2-Lite: dim 2048, 27 layers, 64 routed experts.
    QVERIFY(view.loadPreset(presetIndex(QStringLiteral("configs/deepseek/config_16B.json"))));
    QCOMPARE(view.config().model.dim, 2048);
    QCOMPARE(view.config().model.n_layers, 27);
    QCOMPARE(view.config().model.n_routed_experts, 64);

    view.undoStack()->undo();
    view.undoStack()->undo();
    QCOMPARE(view.config().model.dim, 512);
    QCOMPARE(view.configName(), QStringLiteral("configs/small.json"));
    view.undoStack()->undo();
    QCOMPARE(view.config().model.dim, 64);
    QCOMPARE(view.configName(), QStringLiteral("tiny.json"));
    QCOMPARE(intEditor(view, "model.dim")->value(), 64);
    QCOMPARE(combo->currentText(), QStringLiteral("tiny.json (open file)"));
}

// A published config opened from a file of the user's: the box names that file (not the tiny
// preset the box would otherwise show) until a preset is chosen.
void TestConfigureView::anOpenedFileIsNamedInThePresetBox() {
    QTemporaryDir folder;
    const QString path = folder.filePath(QStringLiteral("r671.json"));
    // Loading a preset registers the presets' resources; the file is a copy of the published one.
    loadConfigPreset(configPresets()[presetIndex(QStringLiteral("configs/deepseek/config_671B.json"))]);
    QVERIFY(QFile::copy(QStringLiteral(":/presets/configs/deepseek/config_671B.json"), path));
    ConfigureView view(tinyConfig(), QStringLiteral("configs/tiny.json"));
    auto* combo = child<QComboBox>(view, "presetCombo");
    QCOMPARE(combo->currentIndex(), presetIndex(QStringLiteral("configs/tiny.json")));
    QString error;
    QVERIFY2(view.openFile(path, &error), qPrintable(error));
    QCOMPARE(combo->currentText(), QStringLiteral("r671.json (open file)"));
    QCOMPARE(combo->itemData(0, Qt::ToolTipRole).toString(), path);
    QVERIFY(!child<QPushButton>(view, "loadPresetButton")->isEnabled());
    // An edit keeps the file's name; a config with no file name is "custom".
    retype(intEditor(view, "train.steps"), QStringLiteral("7"));
    QCOMPARE(combo->currentText(), QStringLiteral("r671.json (open file)"));
    view.resetConfig(tinyConfig(), QStringLiteral("built-in tiny preset"));
    QCOMPARE(combo->currentText(), QStringLiteral("custom"));
    QVERIFY(view.loadPreset(presetIndex(QStringLiteral("configs/tiny_v2.json"))));
    QCOMPARE(combo->currentIndex(), presetIndex(QStringLiteral("configs/tiny_v2.json")));
    QCOMPARE(combo->count(), int(configPresets().size()));
}

// The fields decoding reads have a group of their own after the model section, open: the cache's
// rows and positions first, then the published checkpoint's storage. A problem in one is marked
// where it shows.
void TestConfigureView::inferenceFieldsHaveAGroupOfTheirOwn() {
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    view.resize(1000, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto* group = child<QGroupBox>(view, "inferenceSection");
    QVERIFY(group);
    QCOMPARE(group->title(), QStringLiteral("Inference (generate, samples)"));
    QCOMPARE(view.form()->inferencePaths(),
             (QStringList{QStringLiteral("model.max_batch_size"), QStringLiteral("model.max_seq_len"),
                          QStringLiteral("model.dtype"), QStringLiteral("model.scale_fmt")}));
    auto* model_section = child<QGroupBox>(view, "modelSection");
    auto* train_section = child<QGroupBox>(view, "trainSection");
    // Between the model and the training sections, in the form's column.
    QVERIFY(model_section->geometry().bottom() < group->geometry().top());
    QVERIFY(group->geometry().bottom() < train_section->geometry().top());
    int previous_y = -1;
    for (const char* path : {"model.max_batch_size", "model.max_seq_len", "model.dtype"}) {
        QWidget* editor = view.form()->editor(QString::fromLatin1(path));
        QVERIFY2(editor && editor->isVisible(), path);  // nothing to unfold
        QVERIFY2(group->isAncestorOf(editor) && !model_section->isAncestorOf(editor), path);
        QVERIFY2(editor->y() > previous_y, path);  // in this order
        previous_y = editor->y();
    }
    QCOMPARE(intEditor(view, "model.max_batch_size")->value(), 8);
    QCOMPARE(intEditor(view, "model.max_seq_len")->value(), 256);
    QCOMPARE(qobject_cast<QComboBox*>(view.form()->editor(QStringLiteral("model.dtype")))->currentText(),
             QStringLiteral("bf16"));
    // What a user must not misread, said in the help of the field.
    QVERIFY2(intEditor(view, "model.max_batch_size")->toolTip().contains(QStringLiteral("not the training micro-batch"),
                                                                         Qt::CaseInsensitive),
             qPrintable(intEditor(view, "model.max_batch_size")->toolTip()));
    auto* note = child<QLabel>(view, "inferenceSectionNote");
    QVERIFY(note && note->isVisible());
    QVERIFY2(note->text().contains(QStringLiteral("not the training micro-batch")), qPrintable(note->text()));

    // The old fold is gone: no toggle, no hidden row.
    QVERIFY(!view.findChild<QToolButton*>(QStringLiteral("inferenceOnlyToggle")));
    QVERIFY(view.form()->editor(QStringLiteral("model.scale_fmt"))->isVisible());

    // A config whose problem is in the group: marked, and on show.
    RunConfig bad = tinyConfig();
    bad.model.max_batch_size = 0;
    view.resetConfig(bad, QStringLiteral("bad"));
    QCOMPARE(view.form()->markedPaths(), QStringList{QStringLiteral("model.max_batch_size")});
    QVERIFY(intEditor(view, "model.max_batch_size")->isVisible());
}

// The cache's rows typed in the group reach the config and its JSON, and come back from a file.
void TestConfigureView::maxBatchSizeEditRoundTrips() {
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    retype(intEditor(view, "model.max_batch_size"), QStringLiteral("3"));
    QCOMPARE(view.config().model.max_batch_size, int64_t(3));
    QCOMPARE(view.config().train.micro_batch_size, int64_t(8));  // the training batch is another field
    QVERIFY2(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"max_batch_size\": 3,")),
             qPrintable(jsonEdit(view)->toPlainText()));
    const QString path = folder.filePath(QStringLiteral("rows.json"));
    QString error;
    QVERIFY2(view.saveFile(path, &error), qPrintable(error));
    QCOMPARE(loadRunConfigFile(path.toStdString()).model.max_batch_size, int64_t(3));

    // And from the JSON back into the form.
    jsonEdit(view)->setPlainText(replacedInJson(jsonEdit(view)->toPlainText(), QStringLiteral("\"max_batch_size\": 3,"),
                                                QStringLiteral("\"max_batch_size\": 5,")));
    QTRY_COMPARE(intEditor(view, "model.max_batch_size")->value(), 5);
    QCOMPARE(view.config().model.max_batch_size, int64_t(5));
    view.undoStack()->undo();
    QCOMPARE(intEditor(view, "model.max_batch_size")->value(), 3);
}

// train.sample_prompts is a text of lines, one prompt each: typed on two lines in a small
// multi-line editor, it is one JSON string with a newline, and reads back as two lines.
void TestConfigureView::samplePromptsAreLinesThatRoundTrip() {
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto* prompts = qobject_cast<QPlainTextEdit*>(view.form()->editor(QStringLiteral("train.sample_prompts")));
    QVERIFY(prompts);
    QVERIFY(child<QGroupBox>(view, "trainSection")->isAncestorOf(prompts));
    QVERIFY(prompts->toPlainText().isEmpty());
    // Room for a few prompts, and Tab still moves on through the form.
    QVERIFY2(prompts->height() >= 3 * prompts->fontMetrics().lineSpacing(), qPrintable(QString::number(prompts->height())));
    QVERIFY(prompts->tabChangesFocus());
    for (const char* path : {"train.sample_every", "train.sample_tokens", "train.sample_temperature"})
        QVERIFY2(view.form()->editor(QString::fromLatin1(path))->isVisible(), path);

    prompts->setFocus();
    QTest::keyClicks(prompts, QStringLiteral("Once upon a time"));
    QTest::keyClick(prompts, Qt::Key_Return);
    QTest::keyClicks(prompts, QStringLiteral("The cat sat"));
    QCOMPARE(view.config().train.sample_prompts, std::string("Once upon a time\nThe cat sat"));
    QVERIFY2(jsonEdit(view)->toPlainText().contains(QStringLiteral("\"sample_prompts\": \"Once upon a time\\nThe cat sat\"")),
             qPrintable(jsonEdit(view)->toPlainText()));
    QCOMPARE(view.undoStack()->count(), 1);  // the typing is one step

    const QString path = folder.filePath(QStringLiteral("prompts.json"));
    QString error;
    QVERIFY2(view.saveFile(path, &error), qPrintable(error));
    const RunConfig saved = loadRunConfigFile(path.toStdString());
    QCOMPARE(saved.train.sample_prompts, std::string("Once upon a time\nThe cat sat"));
    ConfigureView other(tinyConfig(), QStringLiteral("tiny"));
    QVERIFY2(other.openFile(path, &error), qPrintable(error));
    auto* reopened = qobject_cast<QPlainTextEdit*>(other.form()->editor(QStringLiteral("train.sample_prompts")));
    QCOMPARE(reopened->toPlainText(), QStringLiteral("Once upon a time\nThe cat sat"));
    QCOMPARE(reopened->document()->blockCount(), 2);

    // A JSON edit shows in the editor, line by line.
    jsonEdit(view)->setPlainText(replacedInJson(jsonEdit(view)->toPlainText(),
                                                QStringLiteral("\"Once upon a time\\nThe cat sat\""),
                                                QStringLiteral("\"a\\nb\\nc\"")));
    QTRY_COMPARE(prompts->toPlainText(), QStringLiteral("a\nb\nc"));
    QCOMPARE(view.config().train.sample_prompts, std::string("a\nb\nc"));
    view.undoStack()->undo();
    QCOMPARE(prompts->toPlainText(), QStringLiteral("Once upon a time\nThe cat sat"));
}

void TestConfigureView::savedFileOpensAsTheSameConfig() {
    QTemporaryDir folder;
    QVERIFY(folder.isValid());
    const QString path = folder.filePath(QStringLiteral("edited.json"));
    ConfigureView view(tinyConfig(), QStringLiteral("tiny"));
    retype(lineEditor(view, "train.lr"), QStringLiteral("6e-4"));
    QString error;
    QVERIFY2(view.saveFile(path, &error), qPrintable(error));
    QCOMPARE(view.configName(), path);
    // Read back by the engine's own loader: every field as saved.
    const RunConfig saved = loadRunConfigFile(path.toStdString());
    QCOMPARE(saved.train.lr, 6e-4);
    QCOMPARE(runConfigToJson(saved), runConfigToJson(view.config()));

    ConfigureView other(tinyConfig(), QStringLiteral("tiny"));
    QVERIFY2(other.openFile(path, &error), qPrintable(error));
    QCOMPARE(other.config().train.lr, 6e-4);
    QCOMPARE(other.configName(), path);
    QCOMPARE(other.undoStack()->count(), 1);
    other.undoStack()->undo();
    QCOMPARE(other.config().train.lr, 0.003);

    // A file that does not parse changes nothing and says why, naming the file.
    const QString broken = folder.filePath(QStringLiteral("broken.json"));
    QFile file(broken);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{ \"model\": { \"dim\": } }");
    file.close();
    QVERIFY(!other.openFile(broken, &error));
    QVERIFY2(error.contains(QStringLiteral("broken.json")), qPrintable(error));
    QCOMPARE(other.config().train.lr, 0.003);
    QCOMPARE(other.undoStack()->count(), 1);

    // A JSON text that does not parse is not saved over a good file.
    jsonEdit(view)->setPlainText(QStringLiteral("{ \"train\": "));
    QVERIFY(!view.saveFile(path, &error));
    QVERIFY2(error.contains(QStringLiteral("does not parse")), qPrintable(error));
    QCOMPARE(loadRunConfigFile(path.toStdString()).train.lr, 6e-4);
}

void TestConfigureView::windowAdoptsValidEditsOnly() {
    MainWindow window(tinyConfig(), QStringLiteral("tiny.json"));
    ConfigureView* view = window.configureView();
    QVERIFY(view);
    QCOMPARE(child<QTabWidget>(window, "mainTabs")->widget(0), view);

    retype(intEditor(*view, "train.steps"), QStringLiteral("40"));
    QCOMPARE(window.runConfig().train.steps, 40);
    QCOMPARE(child<QLabel>(window, "stepsLabel")->text(), QStringLiteral("40"));
    QCOMPARE(child<QProgressBar>(window, "progressBar")->maximum(), 40);
    retype(intEditor(*view, "train.micro_batch_size"), QStringLiteral("4"));
    QCOMPARE(window.batchPanel()->runConfig().train.micro_batch_size, 4);
    QCOMPARE(child<QLabel>(window, "batchLabel")->text(), QStringLiteral("m 4 × K 2 × W 1 = B 8 sequences"));

    // Invalid: the window keeps its last valid config.
    retype(intEditor(*view, "model.n_activated_experts"), QStringLiteral("9"));
    QCOMPARE(view->config().model.n_activated_experts, 9);
    QCOMPARE(window.runConfig().model.n_activated_experts, 2);
    QVERIFY(!view->isValid());
    QVERIFY(child<QLabel>(*view, "configIssuesSummary")->text().contains(QStringLiteral("problem")));

    // A preset replaces both, and undo takes both back.
    QVERIFY(view->loadPreset(presetIndex(QStringLiteral("configs/tiny_v2.json"))));
    QCOMPARE(window.runConfig().model.score_func, std::string("softmax"));
    QCOMPARE(window.windowTitle(), QStringLiteral("Trainbench — configs/tiny_v2.json"));
    view->undoStack()->undo();  // back to the invalid state: the window stays
    QCOMPARE(window.runConfig().model.score_func, std::string("softmax"));
    view->undoStack()->undo();  // back to the last valid state
    QCOMPARE(window.runConfig().model.score_func, std::string("sigmoid"));
    QCOMPARE(window.runConfig().train.micro_batch_size, 4);
    QCOMPARE(window.windowTitle(), QStringLiteral("Trainbench — tiny.json"));

    // A config set from outside starts a fresh history.
    RunConfig other = tinyConfig();
    other.train.steps = 77;
    QVERIFY(window.setRunConfig(other, QStringLiteral("other.json")));
    QCOMPARE(view->config().train.steps, 77);
    QCOMPARE(intEditor(*view, "train.steps")->value(), 77);
    QCOMPARE(view->undoStack()->count(), 0);
}

void TestConfigureView::publishedPresetDrivesTheSidePanel() {
    MainWindow window(tinyConfig(), QStringLiteral("tiny.json"));
    ConfigureView* view = window.configureView();
    QVERIFY(view->loadPreset(presetIndex(QStringLiteral("configs/deepseek/config_671B.json"))));
    // A published config is a model section only: the synthetic data then has the model's
    // 129280-token vocabulary, which the engine refuses to tabulate, naming the fix.
    QCOMPARE(view->issues().size(), size_t{1});
    QCOMPARE(view->issues().front().path, std::string("data.vocab_size"));
    QCOMPARE(view->form()->markedPaths(), QStringList{QStringLiteral("data.vocab_size")});
    // The data problem does not hide what the model costs: the window shows it already.
    QCOMPARE(window.runConfig().model.dim, 7168);
    QCOMPARE(window.batchPanel()->runConfig().model.n_layers, 61);
    retype(intEditor(*view, "data.vocab_size"), QStringLiteral("256"));
    QVERIFY2(view->isValid(), qPrintable(messagesOf(view->issues()).join(QLatin1Char('\n'))));
    QCOMPARE(window.runConfig().model.dim, 7168);
    QCOMPARE(window.runConfig().data.vocab_size, 256);
    const ParamCount params = countParameters(window.runConfig().model);
    // DeepSeek-V3 as published: 671 B parameters, 37 B of them activated per token.
    QVERIFY2(params.total > 660'000'000'000 && params.total < 690'000'000'000, qPrintable(QString::number(params.total)));
    QVERIFY2(params.activated > 36'000'000'000 && params.activated < 39'000'000'000,
             qPrintable(QString::number(params.activated)));
    QCOMPARE(child<QLabel>(window, "totalParamsLabel")->text(), formatCount(params.total));
    QCOMPARE(window.batchPanel()->runConfig().model.n_layers, 61);
}

void TestConfigureView::startRefusesInvalidConfigWithEngineMessage() {
    MainWindow window(tinyConfig(), QStringLiteral("tiny.json"));
    ConfigureView* view = window.configureView();
    retype(intEditor(*view, "train.micro_batch_size"), QStringLiteral("0"));
    QVERIFY(!view->isValid());
    const std::vector<ConfigIssue> issues = validateRunConfig(view->config());
    QVERIFY(!issues.empty());
    QCOMPARE(issues.front().path, std::string("train.micro_batch_size"));

    QSignalSpy failed(window.bridge(), &EngineBridge::startFailed);
    QVERIFY(!window.startRun());
    QVERIFY(!window.bridge()->isLive());
    QCOMPARE(failed.count(), 1);
    const QString status = child<QLabel>(window, "statusLabel")->text();
    QVERIFY2(status.contains(QString::fromStdString(issues.front().message)), qPrintable(status));

    // A JSON text that does not parse is refused before the engine is asked.
    retype(intEditor(*view, "train.micro_batch_size"), QStringLiteral("8"));
    QVERIFY(view->isValid());
    jsonEdit(*view)->setPlainText(QStringLiteral("{ \"model\": "));
    QVERIFY(!window.startRun());
    QCOMPARE(failed.count(), 1);
    QVERIFY(!window.bridge()->isLive());
    QVERIFY(!view->jsonError().isEmpty());
    const QString json_status = child<QLabel>(window, "statusLabel")->text();
    QVERIFY2(json_status.contains(view->jsonError()), qPrintable(json_status));
}

void TestConfigureView::batchSplitIsAnUndoableStep() {
    MainWindow window(tinyConfig(), QStringLiteral("tiny.json"));
    ConfigureView* view = window.configureView();
    RunConfig resplit = window.runConfig();
    resplit.train.micro_batch_size = 4;
    resplit.train.gradient_accumulation_steps = 4;
    QVERIFY(window.applyEdit(configEditBetween(window.runConfig(), resplit, QStringLiteral("Batch split m 4 × K 4"))));
    QCOMPARE(view->config().train.micro_batch_size, 4);
    QCOMPARE(view->config().train.gradient_accumulation_steps, 4);
    QCOMPARE(intEditor(*view, "train.gradient_accumulation_steps")->value(), 4);
    QCOMPARE(view->undoStack()->count(), 1);

    view->undoStack()->undo();
    QCOMPARE(view->config().train.micro_batch_size, 8);
    QCOMPARE(window.runConfig().train.micro_batch_size, 8);
    QCOMPARE(window.runConfig().train.gradient_accumulation_steps, 2);
    QCOMPARE(window.batchPanel()->runConfig().train.micro_batch_size, 8);
}

void TestConfigureView::editMenuUndoesFormEdits() {
    MainWindow window(tinyConfig(), QStringLiteral("tiny.json"));
    ConfigureView* view = window.configureView();
    auto* undo = window.findChild<QAction*>(QStringLiteral("undoAction"));
    auto* redo = window.findChild<QAction*>(QStringLiteral("redoAction"));
    QVERIFY(undo && redo);
    QCOMPARE(undo->shortcut(), QKeySequence(QStringLiteral("Ctrl+Z")));
    QCOMPARE(redo->shortcut(), QKeySequence(QStringLiteral("Ctrl+Shift+Z")));
    QVERIFY(!undo->isEnabled());

    retype(intEditor(*view, "train.seed"), QStringLiteral("5"));
    QVERIFY(undo->isEnabled());
    QCOMPARE(undo->text(), QStringLiteral("&Undo Edit train.seed"));
    undo->trigger();
    QCOMPARE(view->config().train.seed, 0);
    QCOMPARE(window.runConfig().train.seed, 0);
    QVERIFY(redo->isEnabled());
    redo->trigger();
    QCOMPARE(view->config().train.seed, 5);
    QCOMPARE(window.runConfig().train.seed, 5);

    // Locked (as while a run is live): the actions and the editors are off.
    view->setLocked(true);
    QVERIFY(!undo->isEnabled());
    QVERIFY(child<QLabel>(*view, "configLockNote")->isVisibleTo(view));
    QVERIFY(intEditor(*view, "train.seed")->isReadOnly());
    undo->trigger();
    QCOMPARE(view->config().train.seed, 5);
    QVERIFY(!view->loadPreset(0));
    view->setLocked(false);
    QVERIFY(undo->isEnabled());
}

QTEST_MAIN(TestConfigureView)
#include "test_configure_view.moc"
