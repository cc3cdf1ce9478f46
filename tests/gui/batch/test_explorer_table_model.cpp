// Tests the explorer's table model on hand-made rows: shape, formatted cells, raw values, the recommended mark.
#include <QAbstractItemModelTester>
#include <QFont>
#include <QSignalSpy>
#include <QTest>

#include "app/config_summary.h"
#include "batch/explorer_table_model.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int64_t kMiB = 1024 * 1024;

ExploreRow makeRow(int64_t m, int64_t k, double tokens_per_s, int64_t measured, int64_t planned, bool fits,
                   std::string note = {}) {
    ExploreRow row;
    row.micro_batch_size = m;
    row.gradient_accumulation_steps = k;
    row.tokens_per_s = tokens_per_s;
    row.measured_peak_bytes = measured;
    row.estimated_peak_bytes = planned;
    row.fits = fits;
    row.note = std::move(note);
    return row;
}

// The splits of B = 8 on one rank, as the explorer would report them; m = 8 ran out of memory.
std::vector<ExploreRow> splitsOfEight() {
    return {makeRow(1, 8, 10500.4, 3 * kMiB, 3 * kMiB + kMiB / 4, true),
            makeRow(2, 4, 18250.0, 4 * kMiB, 4 * kMiB + kMiB / 2, true),
            makeRow(4, 2, 21999.6, 6 * kMiB + kMiB / 2, 7 * kMiB, true),
            makeRow(8, 1, 0.0, 11 * kMiB, 12 * kMiB, false, "out of memory")};
}

QString cell(const ExplorerTableModel& model, int row, int column, int role = Qt::DisplayRole) {
    return model.data(model.index(row, column), role).toString();
}

}  // namespace

class TestExplorerTableModel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rowsArriveOneAtATime();
    void formatsCells();
    void rawValuesForSorting();
    void marksOneRecommendedRow();
    void clearEmptiesTheTable();
    void headersNameTheColumns();
};

void TestExplorerTableModel::rowsArriveOneAtATime() {
    ExplorerTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), static_cast<int>(ExplorerTableModel::ColumnCount));
    QCOMPARE(model.columnCount(), 7);

    const std::vector<ExploreRow> rows = splitsOfEight();
    for (size_t i = 0; i < rows.size(); ++i) {
        model.appendRow(rows[i]);
        QCOMPARE(model.rowCount(), static_cast<int>(i + 1));
        QCOMPARE(inserted.count(), static_cast<int>(i + 1));
        // Each insertion is one row at the end.
        QCOMPARE(inserted.last().at(1).toInt(), static_cast<int>(i));
        QCOMPARE(inserted.last().at(2).toInt(), static_cast<int>(i));
    }
    // A table: no row has children.
    QCOMPARE(model.rowCount(model.index(0, 0)), 0);
    QCOMPARE(model.columnCount(model.index(0, 0)), 0);
    QVERIFY(!model.data(model.index(4, 0)).isValid());
}

void TestExplorerTableModel::formatsCells() {
    ExplorerTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (const ExploreRow& row : splitsOfEight()) model.appendRow(row);
    ExploreRow sharded = splitsOfEight().front();
    sharded.zero_stage = 3;
    sharded.activation_checkpointing = "full";
    model.appendRow(sharded);
    QCOMPARE(cell(model, model.rowCount() - 1, ExplorerTableModel::Layout), QStringLiteral("stage 3 · full"));

    QCOMPARE(cell(model, 0, ExplorerTableModel::Layout), QStringLiteral("stage 0"));
    QCOMPARE(cell(model, 0, ExplorerTableModel::MicroBatch), QStringLiteral("1"));
    QCOMPARE(cell(model, 0, ExplorerTableModel::Accumulation), QStringLiteral("8"));
    // Rates are whole tokens per second, grouped: 10500.4 -> 10,500 and 21999.6 -> 22,000.
    QCOMPARE(cell(model, 0, ExplorerTableModel::TokensPerS), QStringLiteral("10,500"));
    QCOMPARE(cell(model, 2, ExplorerTableModel::TokensPerS), QStringLiteral("22,000"));
    QCOMPARE(cell(model, 0, ExplorerTableModel::MeasuredPeak), QStringLiteral("3.00 MiB"));
    QCOMPARE(cell(model, 0, ExplorerTableModel::PlannedPeak), QStringLiteral("3.25 MiB"));
    QCOMPARE(cell(model, 2, ExplorerTableModel::MeasuredPeak), QStringLiteral("6.50 MiB"));
    QCOMPARE(cell(model, 2, ExplorerTableModel::Fits), QStringLiteral("yes"));

    // The split that ran out of memory: no rate, the reason in place of "yes", in red.
    QCOMPARE(cell(model, 3, ExplorerTableModel::TokensPerS), QStringLiteral("—"));
    QCOMPARE(cell(model, 3, ExplorerTableModel::Fits), QStringLiteral("no: out of memory"));
    QCOMPARE(cell(model, 3, ExplorerTableModel::PlannedPeak), QStringLiteral("12.0 MiB"));
    QCOMPARE(cell(model, 3, ExplorerTableModel::Fits, Qt::ToolTipRole), QStringLiteral("out of memory"));
    QVERIFY(model.data(model.index(3, ExplorerTableModel::Fits), Qt::ForegroundRole).isValid());
    QVERIFY(!model.data(model.index(0, ExplorerTableModel::Fits), Qt::ForegroundRole).isValid());

    // Numbers line up on the right, words on the left.
    const int number_alignment =
        model.data(model.index(0, ExplorerTableModel::TokensPerS), Qt::TextAlignmentRole).toInt();
    QVERIFY(number_alignment & Qt::AlignRight);
    const int word_alignment = model.data(model.index(0, ExplorerTableModel::Fits), Qt::TextAlignmentRole).toInt();
    QVERIFY(word_alignment & Qt::AlignLeft);
}

void TestExplorerTableModel::rawValuesForSorting() {
    ExplorerTableModel model;
    for (const ExploreRow& row : splitsOfEight()) model.appendRow(row);
    const auto value = [&](int row, int column) {
        return model.data(model.index(row, column), ExplorerTableModel::ValueRole);
    };
    QCOMPARE(value(1, ExplorerTableModel::MicroBatch).toLongLong(), 2LL);
    QCOMPARE(value(1, ExplorerTableModel::Accumulation).toLongLong(), 4LL);
    QCOMPARE(value(1, ExplorerTableModel::TokensPerS).toDouble(), 18250.0);
    QCOMPARE(value(1, ExplorerTableModel::MeasuredPeak).toLongLong(), 4LL * kMiB);
    QCOMPARE(value(1, ExplorerTableModel::PlannedPeak).toLongLong(), 4LL * kMiB + kMiB / 2);
    QCOMPARE(value(1, ExplorerTableModel::Fits).toBool(), true);
    QCOMPARE(value(3, ExplorerTableModel::Fits).toBool(), false);
}

void TestExplorerTableModel::marksOneRecommendedRow() {
    ExplorerTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (const ExploreRow& row : splitsOfEight()) model.appendRow(row);
    QCOMPARE(model.recommended(), -1);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);

    model.setRecommended(2);
    QCOMPARE(model.recommended(), 2);
    // The whole row changes, and only it.
    QCOMPARE(changed.count(), 1);
    QCOMPARE(changed.at(0).at(0).toModelIndex(), model.index(2, 0));
    QCOMPARE(changed.at(0).at(1).toModelIndex(), model.index(2, ExplorerTableModel::ColumnCount - 1));
    for (int row = 0; row < model.rowCount(); ++row)
        QCOMPARE(model.data(model.index(row, 0), ExplorerTableModel::RecommendedRole).toBool(), row == 2);
    QCOMPARE(cell(model, 2, ExplorerTableModel::Fits), QStringLiteral("yes ★"));
    QVERIFY(qvariant_cast<QFont>(model.data(model.index(2, 0), Qt::FontRole)).bold());
    QVERIFY(model.data(model.index(2, 0), Qt::BackgroundRole).isValid());
    QVERIFY(!model.data(model.index(1, 0), Qt::BackgroundRole).isValid());

    // Moving the mark repaints the old row and the new one.
    changed.clear();
    model.setRecommended(1);
    QCOMPARE(changed.count(), 2);
    QCOMPARE(changed.at(0).at(0).toModelIndex().row(), 2);
    QCOMPARE(changed.at(1).at(0).toModelIndex().row(), 1);
    QCOMPARE(cell(model, 2, ExplorerTableModel::Fits), QStringLiteral("yes"));

    // Setting it again changes nothing; out of range clears it.
    changed.clear();
    model.setRecommended(1);
    QCOMPARE(changed.count(), 0);
    model.setRecommended(17);
    QCOMPARE(model.recommended(), -1);
    QCOMPARE(changed.count(), 1);
}

void TestExplorerTableModel::clearEmptiesTheTable() {
    ExplorerTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (const ExploreRow& row : splitsOfEight()) model.appendRow(row);
    model.setRecommended(0);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    model.clear();
    QCOMPARE(reset.count(), 1);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.recommended(), -1);
    // An empty model has nothing to reset.
    model.clear();
    QCOMPARE(reset.count(), 1);
    model.appendRow(splitsOfEight().front());
    QCOMPARE(model.rowCount(), 1);
}

void TestExplorerTableModel::headersNameTheColumns() {
    ExplorerTableModel model;
    const QStringList expected{QStringLiteral("layout"),      QStringLiteral("m"),           QStringLiteral("K"),
                               QStringLiteral("tokens / s"),  QStringLiteral("measured peak"),
                               QStringLiteral("planned peak"), QStringLiteral("fits")};
    for (int column = 0; column < model.columnCount(); ++column) {
        QCOMPARE(model.headerData(column, Qt::Horizontal).toString(), expected.at(column));
        QVERIFY(!model.headerData(column, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty());
    }
    QVERIFY(!model.headerData(0, Qt::Vertical).isValid());
    QVERIFY(!model.headerData(ExplorerTableModel::ColumnCount, Qt::Horizontal).isValid());
}

QTEST_MAIN(TestExplorerTableModel)
#include "test_explorer_table_model.moc"
