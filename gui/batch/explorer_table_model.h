// ExplorerTableModel: the batch explorer's rows as a table: layout, m, K, tokens/s, measured and planned peak, fits.
#pragma once

#include <vector>

#include <QAbstractTableModel>

#include "trainbench/batch_explorer.h"

namespace trainbench::gui {

// Rows arrive one at a time while the explorer measures; the recommendation is known only at
// the end (it compares every row), so it is set separately and may move or vanish.
class ExplorerTableModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Layout, MicroBatch, Accumulation, TokensPerS, MeasuredPeak, PlannedPeak, Fits, ColumnCount };
    // The unformatted number of a cell (qlonglong or double; bool for Fits; the stage for Layout),
    // for sorting and tests.
    static constexpr int ValueRole = Qt::UserRole + 1;
    // True in every cell of the recommended row.
    static constexpr int RecommendedRole = Qt::UserRole + 2;

    explicit ExplorerTableModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    void clear();
    void appendRow(const ExploreRow& row);
    // `row` indexes rows(); -1 clears the mark.
    void setRecommended(int row);

    const std::vector<ExploreRow>& rows() const { return rows_; }
    int recommended() const { return recommended_; }

private:
    std::vector<ExploreRow> rows_;
    int recommended_ = -1;
};

}  // namespace trainbench::gui
