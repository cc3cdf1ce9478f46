// DeviceCountDialog: the open config against 1, 2, 4 ... 64 devices of its target's kind, and the published configs' claims, each answered by the planner (DeviceCountModel).
#include "batch/device_count_dialog.h"

#include <QApplication>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QStringList>
#include <QTableView>
#include <QVBoxLayout>

#include "trainbench/target_machine.h"

namespace trainbench::gui {

namespace {

QTableView* tableFor(DeviceCountModel* model, const QString& object_name, QWidget* parent) {
    auto* view = new QTableView(parent);
    view->setObjectName(object_name);
    view->setModel(model);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setAlternatingRowColors(true);
    view->setWordWrap(false);
    view->setTextElideMode(Qt::ElideRight);  // a long reason reads whole in its tooltip
    view->verticalHeader()->setVisible(false);
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().lineSpacing() + 8);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    view->horizontalHeader()->setStretchLastSection(false);
    // The layout takes what the numbers leave: a long reason elides there, whole in its tooltip
    // (and, for the claims, in the sentences under the table).
    const int layout_section = model->columnCount() - (DeviceCountModel::ColumnCount - DeviceCountModel::Layout);
    view->horizontalHeader()->setSectionResizeMode(layout_section, QHeaderView::Stretch);
    return view;
}

// Every row shown without a scroll bar: the tables are short.
void fitHeight(QTableView* view, int rows) {
    view->setMinimumHeight(view->horizontalHeader()->sizeHint().height() +
                           rows * view->verticalHeader()->defaultSectionSize() + 2 * view->frameWidth() + 2);
}

QLabel* wrappedLabel(const QString& object_name, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(object_name);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

}  // namespace

DeviceCountDialog::DeviceCountDialog(QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("deviceCountDialog"));
    setWindowTitle(tr("What fits, by device count"));
    counts_ = new DeviceCountModel(/*with_config_column=*/false, this);
    claims_ = new DeviceCountModel(/*with_config_column=*/true, this);

    auto* layout = new QVBoxLayout(this);
    title_ = wrappedLabel(QStringLiteral("deviceCountTitle"), this);
    layout->addWidget(title_);
    counts_view_ = tableFor(counts_, QStringLiteral("deviceCountTable"), this);
    fitHeight(counts_view_, static_cast<int>(tableDeviceCounts().size()));
    layout->addWidget(counts_view_, 1);
    claims_title_ = wrappedLabel(QStringLiteral("claimsTitle"), this);
    layout->addWidget(claims_title_);
    claims_view_ = tableFor(claims_, QStringLiteral("claimsTable"), this);
    fitHeight(claims_view_, 3);
    claims_view_->setMaximumHeight(claims_view_->minimumHeight());
    layout->addWidget(claims_view_, 0);
    claims_answer_ = wrappedLabel(QStringLiteral("claimsAnswerLabel"), this);
    layout->addWidget(claims_answer_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(980, 560);
}

void DeviceCountDialog::showConfig(const RunConfig& config, const std::vector<PublishedConfig>& published) {
    QApplication::setOverrideCursor(Qt::WaitCursor);
    std::vector<DeviceCountRow> rows;
    for (int64_t devices : tableDeviceCounts()) rows.push_back(deviceCountRow(config, devices));
    counts_->setRows(rows);
    std::vector<DeviceCountRow> claims;
    for (const PublishedConfig& one : published) {
        DeviceCountRow row = deviceCountRow(claimConfig(one), one.devices);
        row.name = one.name;
        claims.push_back(std::move(row));
    }
    claims_->setRows(claims);
    QStringList answers;
    for (const DeviceCountRow& row : claims) answers << describeClaim(row);
    claims_answer_->setText(answers.join(QLatin1Char('\n')));
    QApplication::restoreOverrideCursor();

    const TargetMachine target = resolveTarget(config);
    const QString kind = target.kind == TargetKind::Here
                             ? tr("this machine's device (%1), each count sharing its memory as runtime's ranks do")
                                   .arg(target.gpu ? tr("cuda") : tr("cpu"))
                             : QString::fromStdString(target.label).section(QStringLiteral(" x "), 1);
    title_->setText(tr("The open config on 1 to %1 devices of %2: for each count the cheapest layout that fits "
                       "(10 % of the memory kept free), its m × K, its peak, a node's host "
                       "memory and NVMe when offloaded, and the predicted step.")
                        .arg(tableDeviceCounts().back())
                        .arg(kind));
    const DeviceKind* claim_kind = findDeviceKind(parseChoice<TargetKind>(kClaimKind));
    claims_title_->setText(tr("The published configs as their guides state them: seq_len 4,096, bf16, a global batch "
                              "of 64 sequences, on %1 nodes of %2 (bench/offload_plan.sh):")
                               .arg(claim_kind ? QString::fromLatin1(claim_kind->label) : QString::fromLatin1(kClaimKind))
                               .arg(claim_kind ? claim_kind->devices_per_node : 8));
    claims_view_->setVisible(!published.empty());
    claims_title_->setVisible(!published.empty());
    claims_answer_->setVisible(!published.empty());
}

}  // namespace trainbench::gui
