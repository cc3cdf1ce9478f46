// The store writer thread: drain, batch, commit.
#include "trainbench/store_writer.h"

#include <optional>

#include "trainbench/run_store.h"

namespace trainbench {

StoreWriter::StoreWriter(std::string store_folder, std::string run_id, std::shared_ptr<BusSubscription> inbox,
                         std::chrono::milliseconds period, StoreHealthHooks hooks)
    : folder_(std::move(store_folder)),
      run_id_(std::move(run_id)),
      inbox_(std::move(inbox)),
      period_(period),
      hooks_(std::move(hooks)) {
    thread_ = std::thread([this] { loop(); });
}

StoreWriter::~StoreWriter() { stop(); }

void StoreWriter::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

std::string StoreWriter::error() const {
    std::lock_guard lock(error_mutex_);
    return error_;
}

void StoreWriter::loop() {
    try {
        RunStore store(folder_);
        BusBatch pending;
        auto last_commit = std::chrono::steady_clock::now();
        // Set while commits fail: the owner holds the run, and gives up after a while.
        std::optional<std::chrono::steady_clock::time_point> failing_since;
        bool gave_up = false;
        // An empty commit still moves the heartbeat, so a paused or slow run stays `running`.
        // A failed commit (SQLite rolls it back whole) keeps its points and is retried next
        // period, so nothing is lost while the owner holds the run.
        auto commit = [&] {
            last_commit = std::chrono::steady_clock::now();
            try {
                store.commitBatch(run_id_, pending.points, pending.events);
            } catch (const std::exception& e) {
                {
                    std::lock_guard lock(error_mutex_);
                    error_ = e.what();
                }
                if (!failing_since) {
                    failing_since = last_commit;
                    if (hooks_.unwritable) hooks_.unwritable(e.what());
                } else if (!gave_up && last_commit - *failing_since >= hooks_.give_up_after) {
                    gave_up = true;
                    if (hooks_.give_up) hooks_.give_up(e.what());
                }
                return false;
            }
            points_written_ += static_cast<int64_t>(pending.points.size());
            pending = BusBatch{};
            if (failing_since) {
                failing_since.reset();
                {
                    std::lock_guard lock(error_mutex_);
                    error_.clear();  // every held point made it: nothing was lost
                }
                if (hooks_.writable) hooks_.writable();
            }
            return true;
        };
        while (true) {
            const bool finishing = stop_.load() || inbox_->closed();
            BusBatch batch = finishing ? inbox_->drain() : inbox_->waitAndDrain(period_);
            pending.points.insert(pending.points.end(), batch.points.begin(), batch.points.end());
            pending.events.insert(pending.events.end(), batch.events.begin(), batch.events.end());
            if (finishing) {
                for (int attempt = 0; attempt < 3 && !commit(); ++attempt) std::this_thread::sleep_for(period_);
                return;
            }
            if (std::chrono::steady_clock::now() - last_commit >= period_) commit();
        }
    } catch (const std::exception& e) {
        std::lock_guard lock(error_mutex_);
        error_ = e.what();
    }
}

}  // namespace trainbench
