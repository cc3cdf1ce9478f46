// RunFollower: a stored run as the run stream, first what is there, then what is committed, until it ends.
#include "store/run_follower.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "trainbench/run_store.h"
#include "trainbench/run_stream.h"

namespace trainbench {
namespace {

using Clock = std::chrono::steady_clock;

// What has been read of the run so far, and what is still to send.
class Cursor {
public:
    Cursor(std::string run_id, int64_t from_step) : run_id_(std::move(run_id)), from_step_(from_step) {}

    // The points committed since the last read and the events added since, both from
    // `from_step` on, as lines: each event after the points of steps before its own.
    std::string readNew(RunStore& store) {
        std::vector<MetricPoint> points;
        for (MetricPoint& p : store.metricsAfter(run_id_, last_row_, &last_row_)) {
            if (p.step >= from_step_) {
                points.push_back(std::move(p));
            } else {
                ++points_before_;
                last_before_ = std::move(p);
            }
        }
        // Events are few and appended: the ones past those counted are new.
        const std::vector<RunEvent> all_events = store.events(run_id_);
        std::vector<RunEvent> events;
        for (size_t i = events_seen_; i < all_events.size(); ++i)
            if (all_events[i].step >= from_step_) events.push_back(all_events[i]);
        events_seen_ = std::max(events_seen_, all_events.size());

        std::string lines;
        size_t next_event = 0, group_start = 0;
        for (size_t i = 0; i <= points.size(); ++i) {
            const bool boundary = i == points.size() || points[i].step != points[group_start].step;
            if (!boundary) continue;
            if (i > group_start) {
                while (next_event < events.size() && events[next_event].step < points[group_start].step)
                    lines += encodeStreamEvent(events[next_event++]);
                lines += encodeStreamPoints({points.begin() + group_start, points.begin() + i});
            }
            group_start = i;
        }
        for (; next_event < events.size(); ++next_event) lines += encodeStreamEvent(events[next_event]);
        return lines;
    }

    // Points read and not sent: before from_step; the last of them in commit order.
    int64_t pointsBefore() const { return points_before_; }
    const std::optional<MetricPoint>& lastBefore() const { return last_before_; }

private:
    std::string run_id_;
    int64_t from_step_;
    int64_t last_row_ = 0;
    size_t events_seen_ = 0;
    int64_t points_before_ = 0;
    std::optional<MetricPoint> last_before_;
};

}  // namespace

bool followRun(const FollowOptions& options, const std::function<bool(const std::string& line)>& write,
               const std::function<bool()>& stop) {
    auto store = std::make_unique<RunStore>(options.store_folder);
    std::optional<RunRecord> run = store->findRun(options.run_id);
    if (!run) throw StoreError("run '" + options.run_id + "' is not in the store " + store->path());

    // What is stored now, read before the header, which counts the points it leaves out.
    Cursor cursor(options.run_id, options.from_step);
    const std::string backlog = cursor.readNew(*store);
    Clock::time_point last_write = Clock::now();
    const auto send = [&](const std::string& lines) {
        if (lines.empty()) return true;
        last_write = Clock::now();
        return write(lines);
    };
    if (!send(encodeStreamHeader(options.run_id, options.from_step, cursor.pointsBefore(), cursor.lastBefore()) + encodeStreamRun(*run)) ||
        !send(backlog) || !send(encodeStreamLive()))
        return false;

    int quiet_polls = 0;
    while (run->status == "running") {
        if (stop()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(options.poll_ms));
        // The status first: points committed before the run left `running` are then all in
        // the read that follows, and the run ends after them.
        run = store->findRun(options.run_id);
        if (!run) throw StoreError("run '" + options.run_id + "' was removed from the store " + store->path());
        const std::string lines = cursor.readNew(*store);
        if (!send(lines)) return false;
        quiet_polls = lines.empty() ? quiet_polls + 1 : 0;
        if (run->status == "running" && quiet_polls >= options.quiet_polls_before_owner_check) {
            store = std::make_unique<RunStore>(options.store_folder);
            quiet_polls = 0;
            run = store->findRun(options.run_id);
            if (!run) throw StoreError("run '" + options.run_id + "' was removed from the store " + store->path());
            if (run->status != "running" && !send(cursor.readNew(*store))) return false;
        }
        if (Clock::now() - last_write >= std::chrono::milliseconds(options.alive_ms) && !send(encodeStreamAlive()))
            return false;
    }
    return write(encodeStreamEnd(*run));
}

}  // namespace trainbench
