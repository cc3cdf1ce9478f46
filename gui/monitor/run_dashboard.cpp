// RunDashboard: the current run at a glance beside the plots: status line, progress, latest values and event log.
#include "common/value_label.h"
#include "monitor/run_dashboard.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QVBoxLayout>

#include "common/display_format.h"
#include "monitor/metric_plots.h"
#include "monitor/monitor_view.h"
#include "runs/run_feed.h"
#include "runs/remote_feed.h"
#include "runs/store_tail.h"
#include "trainbench/batch_schedule.h"
#include "trainbench/config_io.h"
#include "trainbench/event_kind.h"
#include "trainbench/metric_keys.h"
#include "trainbench/run_sample.h"

namespace trainbench::gui {

namespace {


QString formatLoss(double value) {
    return std::isfinite(value) ? QString::number(value, 'f', 4) : missingValue();
}

QString capitalized(QString text) {
    if (!text.isEmpty()) text[0] = text[0].toUpper();
    return text;
}

bool isRankPeakKey(const std::string& key) {
    const auto parsed = metric::parseMemoryKey(key);
    return parsed && parsed->what == metric::kPeakBytes;
}

}  // namespace

RunDashboard::RunDashboard(MonitorView* monitor, QWidget* panel) : QObject(panel), monitor_(monitor) {
    status_label_ = valueLabel(QStringLiteral("statusLabel"), panel);
    status_label_->setMinimumHeight(status_label_->fontMetrics().lineSpacing() * 2);
    status_label_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    // It quotes what others wrote (a host's stderr, a run's error): never read as markup.
    status_label_->setTextFormat(Qt::PlainText);
    progress_bar_ = new QProgressBar(panel);
    progress_bar_->setObjectName(QStringLiteral("progressBar"));
    progress_bar_->setTextVisible(true);
    progress_bar_->setFormat(tr("step %v / %m"));

    // Latest: the newest values, for reading exact numbers off a moving curve.
    latest_box_ = new QGroupBox(tr("Latest"), panel);
    auto* live_form = new QFormLayout(latest_box_);
    live_form->setLabelAlignment(Qt::AlignRight);
    live_form->setVerticalSpacing(5);
    loss_value_label_ = valueLabel(QStringLiteral("lossValueLabel"), latest_box_);
    lr_value_label_ = valueLabel(QStringLiteral("lrValueLabel"), latest_box_);
    throughput_value_label_ = valueLabel(QStringLiteral("throughputValueLabel"), latest_box_);
    elapsed_value_label_ = valueLabel(QStringLiteral("elapsedValueLabel"), latest_box_);
    collectives_value_label_ = valueLabel(QStringLiteral("collectivesValueLabel"), latest_box_);
    collectives_value_label_->setToolTip(
        tr("Collective calls of the last optimizer step (comm/collectives): buckets + 1 at ZeRO stage 0, "
           "2 x buckets + 2 at stage 1 whatever the accumulation steps, (K + 1) x buckets + 2 at stage 2, "
           "K x (3 x units - 1) + 2 at stage 3"));
    rank_peaks_value_label_ = valueLabel(QStringLiteral("rankPeaksValueLabel"), latest_box_);
    rank_peaks_value_label_->setToolTip(
        tr("The most bytes each rank held during the last logged step (mem/<device>/peak_bytes)"));
    live_form->addRow(tr("Loss:"), loss_value_label_);
    live_form->addRow(tr("Learning rate:"), lr_value_label_);
    live_form->addRow(tr("Tokens / s:"), throughput_value_label_);
    live_form->addRow(tr("Collectives / step:"), collectives_value_label_);
    live_form->addRow(tr("Peak per rank:"), rank_peaks_value_label_);
    live_form->addRow(tr("Elapsed:"), elapsed_value_label_);
    // runtime.offload_dir: the files' traffic, shown once a run reports it.
    offload_io_value_label_ = valueLabel(QStringLiteral("offloadIoValueLabel"), latest_box_);
    offload_io_value_label_->setToolTip(
        tr("What every rank's offload files (runtime.offload_dir) read and wrote in the last step (io/read_bytes, "
           "io/write_bytes), over the step's time"));
    live_form->addRow(tr("Offload I/O:"), offload_io_value_label_);
    live_form->setRowVisible(offload_io_value_label_, false);

    events_box_ = new QGroupBox(tr("Events"), panel);
    auto* events_layout = new QVBoxLayout(events_box_);
    event_log_ = new QPlainTextEdit(events_box_);
    event_log_->setObjectName(QStringLiteral("eventLog"));
    event_log_->setReadOnly(true);
    event_log_->setMaximumBlockCount(1000);
    event_log_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    events_layout->addWidget(event_log_);
}

void RunDashboard::follow(RunFeed* feed) {
    connect(feed, &RunFeed::pointsArrived, this,
            [this, feed](const QVector<MetricPoint>& points) { onPoints(*feed, points); });
    connect(feed, &RunFeed::eventArrived, this, &RunDashboard::onEvent);
    connect(feed, &RunFeed::runFinished, this, &RunDashboard::onFinished);
}

void RunDashboard::showPlanned(const RunConfig& config) {
    const BatchSchedule schedule(config);
    planned_steps_ = schedule.plannedSteps();
    // An adaptive batch ends when its tokens are seen: the planned steps are an upper bound.
    planned_steps_text_ = schedule.adapts() ? tr("at most %1").arg(planned_steps_) : QString::number(planned_steps_);
    monitor_->resetRun(config);
    progress_bar_->setRange(0, static_cast<int>(std::max<int64_t>(planned_steps_, 1)));
    progress_bar_->setValue(0);
}

void RunDashboard::resetRun(const RunConfig& config) {
    latest_step_ = 0;
    latest_loss_ = 0;
    have_loss_ = false;
    showPlanned(config);
    for (QLabel* label : {loss_value_label_, lr_value_label_, throughput_value_label_, elapsed_value_label_,
                          collectives_value_label_, rank_peaks_value_label_, offload_io_value_label_})
        label->clear();
    if (auto* form = qobject_cast<QFormLayout*>(latest_box_->layout())) form->setRowVisible(offload_io_value_label_, false);
    rank_peaks_.clear();
    Q_EMIT criticalBatchMeasured(0, 0, 0);
    Q_EMIT checkpointWritten(QString(), 0);  // a new run: the last one's checkpoint is not its
    event_log_->clear();
}

void RunDashboard::showRunningStatus() {
    setStatusText(tr("Running · step %1 of %2").arg(latest_step_).arg(planned_steps_text_));
}

void RunDashboard::showPausedStatus() {
    setStatusText(tr("Paused at step %1 of %2: press Resume to continue.").arg(latest_step_).arg(planned_steps_));
}

void RunDashboard::setStatusText(const QString& text, bool error) {
    status_label_->setText(text);
    status_label_->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
}

QString RunDashboard::statusText() const { return status_label_->text(); }

void RunDashboard::appendLog(const QString& line) { event_log_->appendPlainText(line); }

std::vector<std::pair<QString, int64_t>> RunDashboard::rankPeaks() const {
    // "mem/cpu10/peak_bytes" after "mem/cpu9/...": ranks in number order, not text order.
    std::vector<std::pair<QString, int64_t>> out;
    for (auto it = rank_peaks_.begin(); it != rank_peaks_.end(); ++it)
        out.emplace_back(it.key().section(QLatin1Char('/'), 1, 1), static_cast<int64_t>(it.value()));
    auto number = [](const QString& device) {
        qsizetype digits = device.size();
        while (digits > 0 && device[digits - 1].isDigit()) --digits;
        return std::pair{device.left(digits), device.mid(digits).toInt()};
    };
    std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return number(a.first) < number(b.first); });
    return out;
}

void RunDashboard::onPoints(const RunFeed& feed, const QVector<MetricPoint>& points) {
    monitor_->addPoints(points);

    // Only the newest value of each key matters for the labels: one pass, then one update.
    const MetricPoint* loss = nullptr;
    const MetricPoint* lr = nullptr;
    const MetricPoint* throughput = nullptr;
    const MetricPoint* collectives = nullptr;
    const MetricPoint* critical = nullptr;
    const MetricPoint* critical_error = nullptr;
    const MetricPoint* io_read = nullptr;
    const MetricPoint* io_write = nullptr;
    double wall_time = -1.0;
    for (const MetricPoint& point : points) {
        if (point.key == metric::kLoss) loss = &point;
        else if (point.key == metric::kLearningRate) lr = &point;
        else if (point.key == metric::kTokensPerSecond) throughput = &point;
        else if (point.key == metric::kCollectives) collectives = &point;
        else if (isRankPeakKey(point.key)) rank_peaks_[QString::fromStdString(point.key)] = point.value;
        else if (point.key == metric::kCriticalBatchSequences) critical = &point;
        else if (point.key == metric::kCriticalBatchRelativeError) critical_error = &point;
        else if (point.key == metric::kOffloadReadRate) io_read = &point;
        else if (point.key == metric::kOffloadWriteRate) io_write = &point;
        wall_time = std::max(wall_time, point.wall_time);
        latest_step_ = std::max(latest_step_, point.step);
    }
    // With train.log_every > 1 points are sparse; the session's counter keeps the bar exact.
    latest_step_ = std::max(latest_step_, feed.completedSteps());
    if (loss) {
        latest_loss_ = loss->value;
        have_loss_ = true;
        const QCPGraph* smoothed = monitor_->plots()->lossSmoothedGraph();
        const double ema = smoothed->dataCount() > 0 ? (smoothed->data()->constEnd() - 1)->value : qQNaN();
        loss_value_label_->setText(tr("%1  (EMA %2)").arg(formatLoss(loss->value), formatLoss(ema)));
    }
    if (lr) lr_value_label_->setText(QString::number(lr->value, 'g', 3));
    if (throughput) throughput_value_label_->setText(formatGrouped(std::llround(throughput->value)));
    if (collectives) collectives_value_label_->setText(QString::number(std::llround(collectives->value)));
    if (!rank_peaks_.empty()) rank_peaks_value_label_->setText(formatRankPeaks(rankPeaks()));
    if (io_read && io_write) {
        offload_io_value_label_->setText(tr("read %1 GB/s · write %2 GB/s")
                                             .arg(QString::number(io_read->value, 'f', 2), QString::number(io_write->value, 'f', 2)));
        if (auto* form = qobject_cast<QFormLayout*>(latest_box_->layout())) form->setRowVisible(offload_io_value_label_, true);
    }
    if (critical)
        Q_EMIT criticalBatchMeasured(
            critical->value, critical_error && critical_error->step == critical->step ? critical_error->value : qQNaN(),
            critical->step);
    if (wall_time >= 0.0) elapsed_value_label_->setText(formatDuration(wall_time));

    progress_bar_->setValue(static_cast<int>(std::min<int64_t>(latest_step_, progress_bar_->maximum())));
    if (tail_) {
        if (tail_->isPolling()) setStatusText(watchingStatusText());
    } else if (running_) {
        showRunningStatus();
    }
}

void RunDashboard::onEvent(const RunEvent& event) {
    monitor_->addEvent(event);
    // A held run says so where the user looks first; the log keeps the details.
    if (event.kind == eventKindName(EventKind::StoreUnwritable))
        setStatusText(tr("Held at step %1: the run store cannot be written (disk full or read-only); no point is lost.")
                          .arg(event.step),
                      true);
    else if (event.kind == eventKindName(EventKind::StoreWritable))
        setStatusText(tr("Running: the run store accepts writes again."));
    else if (event.kind == eventKindName(EventKind::Checkpoint))
        Q_EMIT checkpointWritten(QString::fromStdString(event.message), event.step);
    Q_EMIT eventShown(event);
    // A sample is a JSON object of the prompt and the text, one per prompt: the Samples page
    // shows them. Only one that does not decode stays in the log, for someone to see.
    if (event.kind == eventKindName(EventKind::Sample) && sampleOfEvent(event)) return;
    appendLog(QStringLiteral("[step %1] %2: %3")
                  .arg(event.step)
                  .arg(QString::fromStdString(event.kind), QString::fromStdString(event.message)));
}

void RunDashboard::onFinished(const RunSummary& summary, const QString& status) {
    const int64_t steps = std::max(summary.steps, latest_step_);
    // An adaptive batch ends in fewer steps than planned at its first batch: a completed run
    // is full. (A watched run's bar keeps its planned length, as its status line says.)
    if (!tail_ && summary.status == RunStatus::Completed && steps > 0 && steps < progress_bar_->maximum())
        progress_bar_->setMaximum(static_cast<int>(steps));
    progress_bar_->setValue(static_cast<int>(std::min<int64_t>(steps, progress_bar_->maximum())));
    const bool has_final_loss = std::isfinite(summary.final_loss);
    const QString loss_text = has_final_loss || have_loss_
                                  ? tr(" · final loss %1").arg(formatLoss(has_final_loss ? summary.final_loss : latest_loss_))
                                  : QString();
    const QString error = QString::fromStdString(summary.error);
    if (tail_) {
        // A watched run names itself: the window's own config may differ.
        const QString id = tail_->runId();
        if (status == QLatin1String("failed"))
            setStatusText(tr("Run %1 (%2) failed at step %3: %4").arg(id, watched_origin_).arg(steps).arg(error),
                          /*error=*/true);
        else
            setStatusText(tr("Run %1 (%2) %3 · %4 of %5 steps%6")
                              .arg(id, watched_origin_, status)
                              .arg(steps)
                              .arg(std::max<int64_t>(planned_steps_, 1))
                              .arg(loss_text));
    } else if (summary.status == RunStatus::Completed) {
        setStatusText(tr("Completed · %1 steps in %2%3").arg(steps).arg(formatDuration(summary.wall_time_s), loss_text));
    } else if (summary.status == RunStatus::Failed) {
        setStatusText(tr("Failed at step %1: %2").arg(steps).arg(error), /*error=*/true);
    } else {
        setStatusText(
            tr("%1 at step %2 of %3%4").arg(capitalized(status)).arg(steps).arg(planned_steps_).arg(loss_text));
    }
    appendLog(tr("%1 after %2 steps").arg(status).arg(steps));
    monitor_->flushReplot();
}

void RunDashboard::watch(const QString& store_folder, const QString& run_id, const RunConfig& fallback) {
    stopWatching();
    watchTail(new StoreTail(store_folder, run_id, this), tr("written by another process"), fallback);
    setStatusText(tr("Watching run %1 (%2): reading the store…").arg(run_id, watched_origin_));
    tail_->start();
}

void RunDashboard::watchRemote(const RemoteLocation& location, const QString& run_id, const RunConfig& fallback) {
    stopWatching();
    auto* feed = new RemoteFeed(location, run_id, this);
    watchTail(feed, tr("on %1").arg(location.hostLabel()), fallback);
    // What the connection does is the status line's while it is not live: connecting,
    // reconnecting after a drop (when, which attempt), refused.
    // In the feed's name: the sync may outlive it (Compare follows the run too).
    connect(feed->sync(), &RemoteRunSync::stateChanged, feed,
            [this, feed](RemoteRunSync::State state, const QString& text) {
                const bool failed = state == RemoteRunSync::State::Failed;
                if (state == RemoteRunSync::State::Live) {
                    setStatusText(watchingStatusText());
                } else if (state == RemoteRunSync::State::Reconnecting || failed ||
                           (state == RemoteRunSync::State::Connecting && !feed->isLoaded())) {
                    setStatusText(tr("Watching run %1 (%2): %3").arg(feed->runId(), watched_origin_, text), failed);
                }
                if (state == RemoteRunSync::State::Reconnecting || failed || state == RemoteRunSync::State::Live)
                    appendLog(text);
            });
    setStatusText(tr("Watching run %1 (%2): connecting…").arg(run_id, watched_origin_));
    feed->start();
}

void RunDashboard::watchTail(StoreTail* tail, const QString& origin, const RunConfig& fallback) {
    tail_ = tail;
    watched_origin_ = origin;
    connect(tail_, &StoreTail::runFound, this,
            [this, fallback](const RunRecord& record) { onWatchedRunFound(record, fallback); });
    // The same handlers as the window's own run, so plots, markers and labels behave alike.
    follow(tail_);
    connect(tail_, &StoreTail::failed, this, [this](const QString& message) {
        setStatusText(tr("Watching run %1: %2").arg(tail_->runId(), message), /*error=*/true);
        appendLog(message);
    });
    Q_EMIT watchChanged();
}

void RunDashboard::stopWatching() {
    if (!tail_) return;
    tail_->stop();
    // Later: this may run inside one of the tail's own signals.
    tail_->deleteLater();
    tail_ = nullptr;
    watched_config_.reset();
    Q_EMIT watchChanged();
}

QString RunDashboard::watchingStatusText() const {
    return tr("Watching run %1 (%2) · step %3 of %4")
        .arg(tail_->runId(), watched_origin_)
        .arg(latest_step_)
        .arg(std::max<int64_t>(planned_steps_, 1));
}

void RunDashboard::onWatchedRunFound(const RunRecord& record, const RunConfig& fallback) {
    // The run's own config sets the plots' scales (steps, the LR schedule, MoE layers); one
    // that no longer parses (an older config format) falls back to the window's.
    RunConfig config = fallback;
    try {
        config = parseRunConfig(record.config_json, "run " + record.run_id);
        watched_config_ = config;
    } catch (const std::exception& error) {
        appendLog(tr("the config of run %1 does not parse (%2); the plots use the window's")
                      .arg(QString::fromStdString(record.run_id), QString::fromStdString(error.what())));
    }
    Q_EMIT watchChanged();
    resetRun(config);
    const QString name = QString::fromStdString(record.name.empty() ? record.run_id : record.name);
    appendLog(tr("watching run %1 (%2, %3), %4")
                  .arg(QString::fromStdString(record.run_id), name, QString::fromStdString(record.status), watched_origin_));
    setStatusText(watchingStatusText());
}

}  // namespace trainbench::gui
