// RunsFilterProxy: keeps the runs whose name, tags or host contain the filter text.
#include "runs/runs_filter_proxy.h"

#include "runs/runs_model.h"

namespace trainbench::gui {

RunsFilterProxy::RunsFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
    setFilterCaseSensitivity(Qt::CaseInsensitive);
    setSortRole(RunsModel::SortRole);
}

bool RunsFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
    const QString pattern = filterRegularExpression().pattern();
    if (pattern.isEmpty()) return true;
    const QAbstractItemModel* source = sourceModel();
    for (int column : {RunsModel::Name, RunsModel::Tags, RunsModel::Host}) {
        const QString text = source->index(source_row, column, source_parent).data().toString();
        if (filterRegularExpression().match(text).hasMatch()) return true;
    }
    return false;
}

}  // namespace trainbench::gui
