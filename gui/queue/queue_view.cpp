// QueueView: the Queue tab: enqueue the shown config or a grid over up to two of its fields.
#include "queue/queue_view.h"

#include <algorithm>
#include <functional>

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "queue/run_queue.h"
#include "trainbench/config_io.h"

namespace trainbench::gui {

namespace {

// Every field of the schema as "section.key", its help as the tooltip; the batch factors
// and the learning rate first, as the fields grids most often vary.
void fillFieldCombo(QComboBox* combo, bool with_none) {
    if (with_none) combo->addItem(QObject::tr("(nothing)"), QString());
    const QStringList first = {QStringLiteral("train.lr"), QStringLiteral("train.micro_batch_size"),
                               QStringLiteral("train.gradient_accumulation_steps"), QStringLiteral("train.seed")};
    for (const QString& field : first) combo->addItem(field, field);
    combo->insertSeparator(combo->count());
    for (const ConfigFieldInfo& info : configSchema()) {
        const QString field = QString::fromStdString(info.section + "." + info.key);
        if (first.contains(field)) {
            combo->setItemData(combo->findData(field), QString::fromStdString(info.help), Qt::ToolTipRole);
            continue;
        }
        combo->addItem(field, field);
        combo->setItemData(combo->count() - 1, QString::fromStdString(info.help), Qt::ToolTipRole);
    }
}

}  // namespace

QueueView::QueueView(QWidget* parent) : QWidget(parent) {
    queue_ = new RunQueue(this);

    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(
        tr("Queued runs train one after another in this window, each live on the Training tab, and are "
           "recorded in the run store. A grid varies one or two fields of the shown config."),
        this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* add_box = new QGroupBox(tr("Add"), this);
    auto* grid = new QGridLayout(add_box);
    auto* enqueue = new QPushButton(tr("Enqueue the shown config"), add_box);
    enqueue->setObjectName(QStringLiteral("enqueueButton"));
    grid->addWidget(enqueue, 0, 0, 1, 4);

    field1_ = new QComboBox(add_box);
    field1_->setObjectName(QStringLiteral("gridField1"));
    fillFieldCombo(field1_, /*with_none=*/false);
    values1_ = new QLineEdit(add_box);
    values1_->setObjectName(QStringLiteral("gridValues1"));
    values1_->setPlaceholderText(tr("values, e.g. 1e-3, 3e-4, 1e-4"));
    field2_ = new QComboBox(add_box);
    field2_->setObjectName(QStringLiteral("gridField2"));
    fillFieldCombo(field2_, /*with_none=*/true);
    values2_ = new QLineEdit(add_box);
    values2_->setObjectName(QStringLiteral("gridValues2"));
    values2_->setPlaceholderText(tr("values, e.g. 1, 2, 4"));
    grid->addWidget(new QLabel(tr("Vary"), add_box), 1, 0);
    grid->addWidget(field1_, 1, 1);
    grid->addWidget(values1_, 1, 2, 1, 2);
    grid->addWidget(new QLabel(tr("and"), add_box), 2, 0);
    grid->addWidget(field2_, 2, 1);
    grid->addWidget(values2_, 2, 2, 1, 2);
    keep_global_batch_ = new QCheckBox(tr("Keep the global batch m×K×W fixed"), add_box);
    keep_global_batch_->setObjectName(QStringLiteral("keepGlobalBatch"));
    keep_global_batch_->setChecked(true);
    keep_global_batch_->setToolTip(
        tr("A grid over the micro-batch size changes the accumulation steps with it (and the other way round), "
           "so every run sees the same number of sequences per optimizer step."));
    grid->addWidget(keep_global_batch_, 3, 1, 1, 2);
    auto* enqueue_grid = new QPushButton(tr("Enqueue grid"), add_box);
    enqueue_grid->setObjectName(QStringLiteral("enqueueGridButton"));
    grid->addWidget(enqueue_grid, 3, 3);
    grid->setColumnStretch(2, 1);
    message_ = new QLabel(add_box);
    message_->setObjectName(QStringLiteral("gridMessage"));
    message_->setWordWrap(true);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    grid->addWidget(message_, 4, 0, 1, 4);
    layout->addWidget(add_box);

    table_ = new QTableView(this);
    table_->setObjectName(QStringLiteral("queueTable"));
    table_->setModel(queue_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setHighlightSections(false);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(RunQueue::NameColumn, QHeaderView::Stretch);
    layout->addWidget(table_, 1);

    auto* buttons = new QHBoxLayout;
    start_button_ = new QPushButton(tr("Start queue"), this);
    start_button_->setObjectName(QStringLiteral("startQueueButton"));
    remove_button_ = new QPushButton(tr("Remove"), this);
    remove_button_->setObjectName(QStringLiteral("removeButton"));
    remove_button_->setToolTip(tr("Removes the selected waiting runs"));
    clear_button_ = new QPushButton(tr("Clear ended"), this);
    clear_button_->setObjectName(QStringLiteral("clearButton"));
    compare_button_ = new QPushButton(tr("Open ended runs in Compare"), this);
    compare_button_->setObjectName(QStringLiteral("compareButton"));
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("queueStatus"));
    buttons->addWidget(start_button_);
    buttons->addWidget(remove_button_);
    buttons->addWidget(clear_button_);
    buttons->addWidget(compare_button_);
    buttons->addStretch(1);
    buttons->addWidget(status_);
    layout->addLayout(buttons);

    connect(enqueue, &QPushButton::clicked, this, &QueueView::enqueueShownConfig);
    connect(enqueue_grid, &QPushButton::clicked, this, &QueueView::enqueueEditedGrid);
    connect(values1_, &QLineEdit::returnPressed, this, &QueueView::enqueueEditedGrid);
    connect(values2_, &QLineEdit::returnPressed, this, &QueueView::enqueueEditedGrid);
    connect(start_button_, &QPushButton::clicked, this, [this] {
        if (running_) Q_EMIT stopRequested();
        else Q_EMIT startRequested();
    });
    connect(remove_button_, &QPushButton::clicked, this, [this] {
        QList<int> rows;
        for (const QModelIndex& index : table_->selectionModel()->selectedRows()) rows << index.row();
        std::sort(rows.begin(), rows.end(), std::greater<int>());
        for (int row : rows) queue_->removeWaiting(row);
    });
    connect(clear_button_, &QPushButton::clicked, queue_, &RunQueue::clearEnded);
    connect(compare_button_, &QPushButton::clicked, this, [this] { Q_EMIT compareRequested(queue_->endedRunIds()); });
    connect(queue_, &RunQueue::jobsChanged, this, &QueueView::updateControls);
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &QueueView::updateControls);
    updateControls();
}

QString QueueView::runNameOf(const QString& config_name) {
    if (config_name.endsWith(QLatin1String(".json"), Qt::CaseInsensitive))
        return QFileInfo(config_name).completeBaseName();
    return config_name;
}

void QueueView::setBaseConfig(const RunConfig& config, const QString& config_name) {
    base_config_ = config;
    base_name_ = runNameOf(config_name);
}

void QueueView::enqueueShownConfig() {
    queue_->enqueue(base_name_, QString(), base_config_);
    showMessage(tr("Queued %1.").arg(base_name_), /*error=*/false);
}

bool QueueView::enqueueGrid(const std::vector<GridAxis>& axes, bool keep_global_batch) {
    std::vector<GridPoint> points;
    try {
        points = expandConfigGrid(base_config_, axes, keep_global_batch);
    } catch (const ConfigError& error) {
        showMessage(tr("Nothing queued: %1").arg(QString::fromStdString(error.what())), /*error=*/true);
        return false;
    }
    for (const GridPoint& point : points) {
        const QString settings = QString::fromStdString(point.label());
        queue_->enqueue(base_name_ + QLatin1Char(' ') + settings, settings, point.config);
    }
    showMessage(tr("Queued %n run(s) of the grid.", nullptr, static_cast<int>(points.size())), /*error=*/false);
    return true;
}

bool QueueView::enqueueEditedGrid() {
    std::vector<GridAxis> axes;
    axes.push_back({field1_->currentData().toString().toStdString(), splitGridValues(values1_->text().toStdString())});
    const QString second = field2_->currentData().toString();
    if (!second.isEmpty())
        axes.push_back({second.toStdString(), splitGridValues(values2_->text().toStdString())});
    return enqueueGrid(axes, keep_global_batch_->isChecked());
}

QString QueueView::gridMessage() const {
    return message_->text();
}

void QueueView::setQueueRunning(bool running) {
    if (running == running_) return;
    running_ = running;
    updateControls();
    Q_EMIT queueRunningChanged(running);
}

void QueueView::showMessage(const QString& text, bool error) {
    message_->setText(text);
    message_->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
}

void QueueView::updateControls() {
    const int waiting = queue_->countIn(RunQueue::State::Waiting);
    const int running = queue_->countIn(RunQueue::State::Running);
    const int ended = queue_->countIn(RunQueue::State::Completed) + queue_->countIn(RunQueue::State::Failed) +
                      queue_->countIn(RunQueue::State::Stopped);
    start_button_->setText(running_ ? tr("Stop queue after this run") : tr("Start queue"));
    start_button_->setEnabled(running_ || waiting > 0);
    bool waiting_selected = false;
    for (const QModelIndex& index : table_->selectionModel()->selectedRows())
        waiting_selected = waiting_selected || queue_->job(index.row()).state == RunQueue::State::Waiting;
    remove_button_->setEnabled(waiting_selected);
    clear_button_->setEnabled(ended > 0);
    compare_button_->setEnabled(!queue_->endedRunIds().isEmpty());
    QStringList parts;
    parts << tr("%1 waiting").arg(waiting);
    if (running > 0) parts << tr("%1 running").arg(running);
    parts << tr("%1 completed").arg(queue_->countIn(RunQueue::State::Completed));
    const int failed = queue_->countIn(RunQueue::State::Failed);
    if (failed > 0) parts << tr("%1 failed").arg(failed);
    const int stopped = queue_->countIn(RunQueue::State::Stopped);
    if (stopped > 0) parts << tr("%1 stopped").arg(stopped);
    status_->setText(parts.join(QStringLiteral(" · ")));
}

}  // namespace trainbench::gui
