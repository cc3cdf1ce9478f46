// Tests that the precision choice shows its memory effect before a run: the batch panel's Precision box (the planner's rows for fp32, bf16, fp8 and fp8 with bf16 moments in its order, peaks and largest m from planPrecisions, the config's own row marked, another row one undoable edit away), the Configure form's choices and line, and the explorer's line.
#include <cmath>

#include <QComboBox>
#include <QJsonValue>
#include <QLabel>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <QRadioButton>
#include <QUndoStack>

#include "widget_lookup.h"
#include "app/main_window.h"
#include "batch/batch_panel.h"
#include "batch/precision_box.h"
#include "common/display_format.h"
#include "configure/config_form.h"
#include "configure/config_presets.h"
#include "configure/configure_view.h"
#include "trainbench/memory_plan.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int64_t kMiB = 1024 * 1024;

RunConfig smallPreset() {
    for (const ConfigPreset& preset : configPresets())
        if (preset.file == QLatin1String("configs/small.json")) return loadConfigPreset(preset);
    qFatal("no configs/small.json preset");
    return {};
}

// configs/small.json on one CPU rank (m 4 × K 4: splits of 16), under a budget set so that fp8's
// smaller activations fit a larger m than fp32: the peak of fp8 at m 16, rounded up to a MiB.
RunConfig smallUnderBudget() {
    RunConfig config = smallPreset();
    config.runtime.device = "cpu";
    config.runtime.threads = 1;
    RunConfig widest = config;
    widest.runtime.dtype = "fp8";
    widest.train.micro_batch_size = 16;
    widest.train.gradient_accumulation_steps = 1;
    const int64_t peak = planMemory(widest).peak_bytes;
    config.runtime.memory_limit_mb = (peak + kMiB - 1) / kMiB;
    return config;
}

QString cellText(const QWidget& root, const QString& name, int row) {
    auto* label = root.findChild<QLabel*>(name + QString::number(row));
    if (!label) qWarning("no label %s%d", qPrintable(name), row);
    return label ? label->text() : QString();
}

QRadioButton* choice(const QWidget& root, int row) {
    auto* button = root.findChild<QRadioButton*>(QStringLiteral("precisionChoice%1").arg(row));
    if (!button) qWarning("no precisionChoice%d", row);
    return button;
}

// The rows checked, by index: the config's own precision only.
QList<int> checkedRows(const QWidget& root) {
    QList<int> rows;
    for (int i = 0; i < PrecisionBox::kRows; ++i)
        if (choice(root, i)->isChecked()) rows << i;
    return rows;
}

// The change of the largest m, written out: "+100 %".
QString expectedChange(int64_t m, int64_t base) {
    if (m == base) return QStringLiteral("same");
    const long percent = std::lround(100.0 * double(m - base) / double(base));
    return percent > 0 ? QStringLiteral("+%1 %").arg(percent) : QStringLiteral("%1 %").arg(percent);
}

}  // namespace

class TestPrecisionBox : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void theRowsAreThePlannersInItsOrder();
    void choosingFp8IsOneUndoableEdit();
    void aPrecisionOutsideTheFourIsAddedAndMarked();
    void aLiveRunLocksTheChoice();
    void theConfigureChoicesSayWhatTheyPlan();
    void theExplorerNamesItsPrecisionAndTheOthersLargestM();
};

void TestPrecisionBox::theRowsAreThePlannersInItsOrder() {
    const RunConfig config = smallUnderBudget();
    BatchPanel panel;
    panel.setRunConfig(config);
    const std::vector<PrecisionFit> expected = planPrecisions(config);
    QCOMPARE(expected.size(), size_t(4));
    // The budget makes the comparison worth its name: fp8 fits all 16, fp32 less.
    QCOMPARE(expected[2].largest_micro_batch, int64_t(16));
    QVERIFY(expected[0].largest_micro_batch > 0);
    QVERIFY(expected[0].largest_micro_batch < expected[2].largest_micro_batch);

    const QStringList names{QStringLiteral("fp32"), QStringLiteral("bf16"), QStringLiteral("fp8"),
                            QStringLiteral("fp8 + bf16 moments")};
    for (int i = 0; i < 4; ++i) {
        QCOMPARE(choice(panel, i)->text(), names[i]);
        QCOMPARE(cellText(panel, QStringLiteral("precisionPeak"), i), formatBytes(expected[size_t(i)].plan.peak_bytes));
        QCOMPARE(cellText(panel, QStringLiteral("precisionLargest"), i),
                 QString::number(expected[size_t(i)].largest_micro_batch));
        QCOMPARE(cellText(panel, QStringLiteral("precisionChange"), i),
                 i == 0 ? QString()
                        : expectedChange(expected[size_t(i)].largest_micro_batch, expected[0].largest_micro_batch));
    }
    // The panel's own peak is the config's row's.
    QCOMPARE(child<QLabel>(panel, "planPeakLabel")->text(), formatBytes(expected[0].plan.peak_bytes));
    // fp32 is the config's: checked and bold; every row can be chosen.
    QCOMPARE(checkedRows(panel), QList<int>{0});
    QVERIFY(choice(panel, 0)->font().bold());
    QVERIFY(!choice(panel, 2)->font().bold());
    for (int i = 0; i < 4; ++i) QVERIFY(choice(panel, i)->isEnabled());
    // Only the planner's four: no fifth row.
    QVERIFY(choice(panel, 4)->isHidden());
    QVERIFY(panel.findChild<QLabel*>(QStringLiteral("precisionPeak4"))->isHidden());
    // Clicking the config's own changes nothing.
    QSignalSpy requests(panel.precisionBox(), &PrecisionBox::precisionRequested);
    choice(panel, 0)->click();
    QCOMPARE(requests.count(), 0);
    QCOMPARE(checkedRows(panel), QList<int>{0});
    QCOMPARE(panel.precisionBox()->fits().current, 0);
}

void TestPrecisionBox::choosingFp8IsOneUndoableEdit() {
    const RunConfig config = smallUnderBudget();
    MainWindow window(config, QStringLiteral("configs/small.json"));
    QUndoStack* undo = window.configureView()->undoStack();
    const int steps = undo->count();
    auto* dtype_combo = qobject_cast<QComboBox*>(window.configureView()->form()->editor(QStringLiteral("runtime.dtype")));
    QVERIFY(dtype_combo);
    const std::vector<PrecisionFit> expected = planPrecisions(config);

    choice(window, 2)->click();
    QCOMPARE(window.runConfig().runtime.dtype, std::string("fp8"));
    QCOMPARE(window.runConfig().runtime.optimizer_dtype, std::string("fp32"));
    QCOMPARE(undo->count(), steps + 1);
    QCOMPARE(undo->undoText(), QStringLiteral("Precision: fp8"));
    QCOMPARE(dtype_combo->currentText(), QStringLiteral("fp8"));
    // The panel plans the new precision, and marks it.
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), formatBytes(expected[2].plan.peak_bytes));
    QCOMPARE(checkedRows(window), QList<int>{2});
    QCOMPARE(cellText(window, QStringLiteral("precisionChange"), 0),
             expectedChange(expected[0].largest_micro_batch, expected[2].largest_micro_batch));

    // fp8 with bf16 moments: both fields in one step.
    choice(window, 3)->click();
    QCOMPARE(window.runConfig().runtime.dtype, std::string("fp8"));
    QCOMPARE(window.runConfig().runtime.optimizer_dtype, std::string("bf16"));
    QCOMPARE(undo->count(), steps + 2);
    QCOMPARE(undo->undoText(), QStringLiteral("Precision: fp8 + bf16 moments"));

    undo->undo();
    QCOMPARE(window.runConfig().runtime.optimizer_dtype, std::string("fp32"));
    QCOMPARE(window.batchPanel()->runConfig().runtime.optimizer_dtype, std::string("fp32"));
    QCOMPARE(checkedRows(window), QList<int>{2});
    undo->undo();
    QCOMPARE(window.runConfig().runtime.dtype, std::string("fp32"));
    QCOMPARE(window.batchPanel()->runConfig().runtime.dtype, std::string("fp32"));
    QCOMPARE(dtype_combo->currentText(), QStringLiteral("fp32"));
    QCOMPARE(checkedRows(window), QList<int>{0});
    QCOMPARE(child<QLabel>(window, "planPeakLabel")->text(), formatBytes(expected[0].plan.peak_bytes));
}

// fp32 compute with bf16 moments is none of the planner's four: the box adds it, marked, as the
// planner plans the config itself.
void TestPrecisionBox::aPrecisionOutsideTheFourIsAddedAndMarked() {
    RunConfig config = smallUnderBudget();
    config.runtime.optimizer_dtype = "bf16";
    BatchPanel panel;
    panel.setRunConfig(config);
    const MemoryPlan own = planMemory(config);
    QCOMPARE(panel.precisionBox()->fits().rows.size(), size_t(5));
    QCOMPARE(panel.precisionBox()->fits().current, 4);
    QVERIFY(!choice(panel, 4)->isHidden());
    QCOMPARE(choice(panel, 4)->text(), QStringLiteral("fp32 + bf16 moments"));
    QCOMPARE(cellText(panel, QStringLiteral("precisionPeak"), 4), formatBytes(own.peak_bytes));
    QCOMPARE(cellText(panel, QStringLiteral("precisionLargest"), 4), QString::number(own.largest_fitting_micro_batch));
    QCOMPARE(checkedRows(panel), QList<int>{4});
    // Half the moments' bytes: the peak is below fp32's by the moments' half.
    const std::vector<PrecisionFit> four = planPrecisions(config);
    QCOMPARE(own.optimizer_bytes * 2, four[0].plan.optimizer_bytes);
    QVERIFY(own.peak_bytes < four[0].plan.peak_bytes);
}

void TestPrecisionBox::aLiveRunLocksTheChoice() {
    BatchPanel panel;
    panel.setRunConfig(smallUnderBudget());
    panel.setRunLive(true);
    for (int i = 0; i < 4; ++i) QVERIFY(!choice(panel, i)->isEnabled());
    QVERIFY(!panel.precisionBox()->choose(2));
    QCOMPARE(checkedRows(panel), QList<int>{0});
    panel.setRunLive(false);
    QVERIFY(choice(panel, 2)->isEnabled());
}

// The Configure form: each choice of runtime.dtype and runtime.optimizer_dtype carries what it
// would plan, and a line under them says it for the config and the others.
void TestPrecisionBox::theConfigureChoicesSayWhatTheyPlan() {
    const RunConfig config = smallUnderBudget();
    ConfigureView view(config, QStringLiteral("configs/small.json"));
    const std::vector<PrecisionFit> expected = planPrecisions(config);
    auto* dtype_combo = qobject_cast<QComboBox*>(view.form()->editor(QStringLiteral("runtime.dtype")));
    auto* moments_combo = qobject_cast<QComboBox*>(view.form()->editor(QStringLiteral("runtime.optimizer_dtype")));
    QVERIFY(dtype_combo && moments_combo);
    auto itemTip = [](QComboBox* combo, const char* choice) {
        return combo->itemData(combo->findText(QString::fromLatin1(choice)), Qt::ToolTipRole).toString();
    };
    QCOMPARE(itemTip(dtype_combo, "fp8"), QStringLiteral("fp8: peak %1, largest m %2")
                                              .arg(formatBytes(expected[2].plan.peak_bytes))
                                              .arg(expected[2].largest_micro_batch));
    QCOMPARE(itemTip(dtype_combo, "fp32"), QStringLiteral("fp32: peak %1, largest m %2")
                                               .arg(formatBytes(expected[0].plan.peak_bytes))
                                               .arg(expected[0].largest_micro_batch));
    // bf16 moments under the config's fp32: planned as the planner plans the config with them.
    RunConfig bf16_moments = config;
    bf16_moments.runtime.optimizer_dtype = "bf16";
    const MemoryPlan moments_plan = planMemory(bf16_moments);
    QCOMPARE(itemTip(moments_combo, "bf16"), QStringLiteral("fp32 + bf16 moments: peak %1, largest m %2")
                                                 .arg(formatBytes(moments_plan.peak_bytes))
                                                 .arg(moments_plan.largest_fitting_micro_batch));
    QLabel* line = view.precisionEffectLine();
    QVERIFY(line);
    const QString text = line->text();
    QVERIFY2(text.startsWith(QStringLiteral("fp32 (now): peak %1, largest m %2 on ")
                                 .arg(formatBytes(expected[0].plan.peak_bytes))
                                 .arg(expected[0].largest_micro_batch)),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("fp8 %1").arg(expected[2].largest_micro_batch)), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("fp8 + bf16 moments %1").arg(expected[3].largest_micro_batch)), qPrintable(text));

    // The line follows an edit of the field.
    auto* form = view.form();
    Q_EMIT form->fieldEdited(QStringLiteral("runtime.dtype"), QJsonValue(QStringLiteral("fp8")));
    QCOMPARE(view.config().runtime.dtype, std::string("fp8"));
    QVERIFY2(line->text().startsWith(QStringLiteral("fp8 (now): peak %1").arg(formatBytes(expected[2].plan.peak_bytes))),
             qPrintable(line->text()));
    // An invalid config has no plan: the line goes.
    Q_EMIT form->fieldEdited(QStringLiteral("model.n_activated_experts"), QJsonValue(99));
    QVERIFY(!view.issues().empty());
    QVERIFY(line->isHidden());
    QVERIFY(itemTip(dtype_combo, "fp8").isEmpty());
}

void TestPrecisionBox::theExplorerNamesItsPrecisionAndTheOthersLargestM() {
    const RunConfig config = smallUnderBudget();
    BatchPanel panel;
    panel.setRunConfig(config);
    const std::vector<PrecisionFit> expected = planPrecisions(config, BatchPanel::memoryBudgetBytes(config));
    const QString text = child<QLabel>(panel, "explorerPrecisionLabel")->text();
    QCOMPARE(text, QStringLiteral("Measured in fp32. The planner's largest m here: fp32 %1, bf16 %2, fp8 %3, "
                                  "fp8 + bf16 moments %4.")
                       .arg(expected[0].largest_micro_batch)
                       .arg(expected[1].largest_micro_batch)
                       .arg(expected[2].largest_micro_batch)
                       .arg(expected[3].largest_micro_batch));
}

QTEST_MAIN(TestPrecisionBox)
#include "test_precision_box.moc"
