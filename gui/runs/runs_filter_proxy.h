// RunsFilterProxy: keeps the runs whose name, tags or host contain the filter text.
#pragma once

#include <QSortFilterProxyModel>

namespace trainbench::gui {

// Case-insensitive substring match on the Name and Tags columns only: a filter "fail" must
// not list every failed run whose name says nothing of it. Set the text with
// setFilterFixedString.
class RunsFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT

public:
    explicit RunsFilterProxy(QObject* parent = nullptr);

protected:
    bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;
};

}  // namespace trainbench::gui
