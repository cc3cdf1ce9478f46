// Tests that no text is cut off at the smallest supported window (1280 x 800): in every view, with the small preset and with DeepSeek-V3's config (and the Configure view on JSON Lines pairs, its record rows and longer data line shown), each visible label's needed height fits the height it was given and its line fits its width unless it wraps; a scroll area that never scrolls sideways holds a widget no wider than it; an elided label's tooltip holds its whole text; a combo's closed box shows its whole choice or holds it in its tooltip; a check box or radio button shows its whole text; a plot's axis titles fit the plot.
#include <QAbstractButton>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QRadioButton>
#include <QScrollArea>
#include <QStandardPaths>
#include <QStyle>
#include <QStyleOptionComboBox>
#include <QTemporaryDir>
#include <QTest>

#include <qcustomplot.h>

#include "app/command_line.h"
#include "app/main_window.h"
#include "common/elided_label.h"
#include "configure/config_presets.h"
#include "configure/configure_view.h"
#include "configure/data_summary_line.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

// Rounding in layouts: a pixel is not a clipped line.
constexpr int kSlackPx = 1;
// The ellipsis eliding code writes.
const QChar kEllipsis(0x2026);

// The user: DeepSeek-V2-Lite opened on a CPU machine and planned for 8 x H100 80 GB.
const QString kSixteenBOnH100 = QStringLiteral("16B on 8 x H100");

// The small preset reading prompt/completion pairs from a JSON Lines file: the data section
// shows its record rows, and its summary line names pairs, tokens and counted targets.
const QString kSmallOnJsonLines = QStringLiteral("small.json on JSON Lines pairs");

QString pairsFile() {
    static QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("pairs.jsonl"));
    QFile file(path);
    if (!file.exists() && file.open(QIODevice::WriteOnly)) {
        for (int i = 0; i < 2000; ++i)
            file.write(QByteArray("{\"prompt\": \"Question ") + QByteArray::number(i) +
                       "?\", \"completion\": \"An answer of some length.\"}\n");
    }
    return path;
}

RunConfig preset(const QString& file) {
    if (file == kSmallOnJsonLines) {
        RunConfig config = preset(QStringLiteral("configs/small.json"));
        config.data.source = "jsonl";
        config.data.path = pairsFile().toStdString();
        config.data.prompt_field = "prompt";
        config.data.completion_field = "completion";
        return config;
    }
    if (file == kSixteenBOnH100) {
        RunConfig config = preset(QStringLiteral("configs/deepseek/config_16B.json"));
        config.runtime.dtype = "bf16";
        config.train.seq_len = 4096;
        config.target.kind = "h100-80";
        config.target.devices = 8;
        return config;
    }
    for (const ConfigPreset& one : configPresets())
        if (one.file == file) return loadConfigPreset(one);
    qFatal("no preset %s", qPrintable(file));
    return {};
}

QString describe(const QWidget* widget) {
    QString path;
    for (const QWidget* w = widget; w; w = w->parentWidget())
        if (!w->objectName().isEmpty()) {
            path = w->objectName();
            break;
        }
    return path;
}

// What is cut off among the visible labels and combos under `root`, one line each.
QStringList clippedText(QWidget* root) {
    QStringList problems;
    for (QLabel* label : root->findChildren<QLabel*>()) {
        if (!label->isVisible() || label->text().isEmpty() || label->width() <= 0) continue;
        const QString name = QStringLiteral("%1 (in %2) \"%3\"").arg(label->objectName(), describe(label->parentWidget()),
                                                                   label->text().left(80));
        const QRect given = label->contentsRect();
        if (label->wordWrap()) {
            const int needed = label->heightForWidth(label->width());
            if (needed > label->height() + kSlackPx)
                problems << QStringLiteral("%1: needs %2 px of height, has %3").arg(name).arg(needed).arg(label->height());
        } else {
            const QSize hint = label->sizeHint();
            if (hint.height() > label->height() + kSlackPx)
                problems << QStringLiteral("%1: needs %2 px of height, has %3").arg(name).arg(hint.height()).arg(label->height());
            if (hint.width() > label->width() + kSlackPx)
                problems << QStringLiteral("%1: needs %2 px of width, has %3").arg(name).arg(hint.width()).arg(label->width());
        }
        // Elided: a line ending in "…" that fills its width (a short "Counting tokens…" is a
        // message in progress, not a cut).
        const int ellipsis = label->text().indexOf(kEllipsis);
        const QFontMetrics metrics = label->fontMetrics();
        const bool fills = metrics.horizontalAdvance(label->text()) > given.width() - 3 * metrics.averageCharWidth();
        if (ellipsis > 0 && label->text().endsWith(kEllipsis) && !label->wordWrap() && fills) {
            const QString kept = label->text().left(ellipsis);
            if (!label->toolTip().contains(kept) || label->toolTip().size() <= kept.size())
                problems << QStringLiteral("%1: elided without its whole text in the tooltip").arg(name);
        }
    }
    for (QComboBox* combo : root->findChildren<QComboBox*>()) {
        if (!combo->isVisible() || combo->currentText().isEmpty() || combo->isEditable()) continue;
        QStyleOptionComboBox option;
        option.initFrom(combo);
        const QRect field = combo->style()->subControlRect(QStyle::CC_ComboBox, &option, QStyle::SC_ComboBoxEditField, combo);
        const int needed = combo->fontMetrics().horizontalAdvance(combo->currentText());
        if (needed > field.width() + kSlackPx && !combo->toolTip().contains(combo->currentText()))
            problems << QStringLiteral("combo %1 (in %2) \"%3\": needs %4 px, shows %5, and its tooltip lacks it")
                            .arg(combo->objectName(), describe(combo->parentWidget()), combo->currentText())
                            .arg(needed)
                            .arg(field.width());
    }
    // A check box's or radio button's text beside its indicator.
    for (QAbstractButton* button : root->findChildren<QAbstractButton*>()) {
        if (!qobject_cast<QCheckBox*>(button) && !qobject_cast<QRadioButton*>(button)) continue;
        if (!button->isVisible() || button->text().isEmpty()) continue;
        if (button->sizeHint().width() > button->width() + kSlackPx)
            problems << QStringLiteral("button %1 (in %2) \"%3\": needs %4 px, has %5")
                            .arg(button->objectName(), describe(button->parentWidget()), button->text())
                            .arg(button->sizeHint().width())
                            .arg(button->width());
    }
    // A plot's axis title is drawn centred on its axis and cut at the plot's edges: a vertical
    // title longer than the plot is tall loses its ends (QCustomPlot neither wraps nor elides).
    for (QCustomPlot* plot : root->findChildren<QCustomPlot*>()) {
        if (!plot->isVisible()) continue;
        for (QCPAxisRect* rect : plot->axisRects())
            for (QCPAxis* axis : rect->axes()) {
                if (!axis->visible() || axis->label().isEmpty()) continue;
                const int length = QFontMetrics(axis->labelFont()).horizontalAdvance(axis->label());
                const bool vertical = axis->orientation() == Qt::Vertical;
                const double centre = vertical ? rect->center().y() : rect->center().x();
                const int extent = vertical ? plot->height() : plot->width();
                if (centre - length / 2.0 < -kSlackPx || centre + length / 2.0 > extent + kSlackPx)
                    problems << QStringLiteral("axis title \"%1\" of plot %2: %3 px long, centred at %4 of %5 px")
                                    .arg(axis->label(), describe(plot))
                                    .arg(length)
                                    .arg(centre)
                                    .arg(extent);
            }
    }
    // A scroll area that never scrolls sideways cuts off whatever its widget is wider than it
    // (a box whose rows need more than the panel's column).
    for (QScrollArea* area : root->findChildren<QScrollArea*>()) {
        if (!area->isVisible() || !area->widget() || area->horizontalScrollBarPolicy() != Qt::ScrollBarAlwaysOff) continue;
        const int needed = area->widget()->width(), given = area->viewport()->width();
        if (needed > given + kSlackPx)
            problems << QStringLiteral("scroll area %1: its widget is %2 px wide, shows %3")
                            .arg(area->objectName())
                            .arg(needed)
                            .arg(given);
    }
    return problems;
}

}  // namespace

class TestTextFits : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void theCheckFindsCutText();
    void everyViewShowsItsWholeText_data();
    void everyViewShowsItsWholeText();
};

// The check itself: a line wider than its label, a wrapped text taller than its label, and an
// elided line without its tooltip are found; an ElidedLabel's is not.
void TestTextFits::theCheckFindsCutText() {
    QWidget window;
    window.resize(400, 200);
    const QString sentence = QStringLiteral("Fewest ranks at m 1: 4 (stage 3, recompute full, m 1), and more words after it");
    auto* line = new QLabel(sentence, &window);
    line->setGeometry(0, 0, 120, 30);
    auto* wrapped = new QLabel(sentence, &window);
    wrapped->setWordWrap(true);
    wrapped->setGeometry(0, 40, 120, 20);
    auto* elided = new ElidedLabel(&window);
    elided->setGeometry(0, 100, 120, 30);
    elided->setFullText(sentence);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(elided->text().endsWith(kEllipsis));
    QCOMPARE(elided->toolTip(), sentence);
    const QStringList problems = clippedText(&window);
    QCOMPARE(problems.size(), 2);
    elided->setToolTip(QString());
    QCOMPARE(clippedText(&window).size(), 3);
    // A plot 80 px tall whose left axis title is far longer than that.
    auto* plot = new QCustomPlot(&window);
    plot->setGeometry(200, 0, 180, 80);
    plot->yAxis->setLabel(sentence);
    plot->show();
    plot->replot();
    QCOMPARE(clippedText(&window).size(), 4);
    plot->yAxis->setLabel(QStringLiteral("m"));
    plot->replot();
    QCOMPARE(clippedText(&window).size(), 3);
}

void TestTextFits::everyViewShowsItsWholeText_data() {
    QTest::addColumn<QString>("config");
    QTest::addColumn<int>("tab");
    const QStringList configs{QStringLiteral("configs/small.json"), QStringLiteral("configs/deepseek/config_671B.json"),
                              kSixteenBOnH100};
    const std::vector<std::pair<const char*, MainWindow::Tab>> tabs{{"configure", MainWindow::Tab::Configure},
                                                                   {"training", MainWindow::Tab::Training},
                                                                   {"batch", MainWindow::Tab::Batch},
                                                                   {"queue", MainWindow::Tab::Queue},
                                                                   {"compare", MainWindow::Tab::Compare}};
    for (const QString& config : configs)
        for (const auto& [name, tab] : tabs)
            QTest::addRow("%s %s", qPrintable(config.section(QLatin1Char('/'), -1)), name) << config << int(tab);
    QTest::addRow("%s configure", qPrintable(kSmallOnJsonLines)) << kSmallOnJsonLines << int(MainWindow::Tab::Configure);
}

void TestTextFits::everyViewShowsItsWholeText() {
    QFETCH(QString, config);
    QFETCH(int, tab);
    MainWindow window(preset(config), config);
    window.resize(kScreenshotWidth, kScreenshotHeight);
    window.show();
    window.showTab(static_cast<MainWindow::Tab>(tab));
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    // The data line's final text is the one to fit: wait for its description.
    QTRY_VERIFY_WITH_TIMEOUT(!window.configureView()->dataSummaryLine()->isBusy(), 60000);
    QTest::qWait(50);  // layouts settle (wrapped labels ask for their height a second time)
    QCOMPARE(window.size(), QSize(kScreenshotWidth, kScreenshotHeight));
    const QStringList problems = clippedText(&window);
    for (const QString& problem : problems) qWarning("%s", qPrintable(problem));
    QVERIFY2(problems.isEmpty(), qPrintable(QStringLiteral("%1 texts cut off").arg(problems.size())));
}

QTEST_MAIN(TestTextFits)
#include "test_text_fits.moc"
