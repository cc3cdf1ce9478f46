// TensorBoardRecorder: drain, write, flush every flush_period; a write failure becomes one warning.
#include "tensorboard/tensorboard_recorder.h"

#include <filesystem>

#include "tensorboard/event_file_writer.h"
#include "tensorboard/run_summaries.h"
#include "trainbench/config_io.h"
#include "trainbench/event_kind.h"

namespace trainbench::tensorboard {

TensorBoardRecorder::TensorBoardRecorder(const std::string& tensorboard_dir, const std::string& run_id,
                                         std::chrono::milliseconds flush_period)
    : flush_period_(flush_period) {
    const std::filesystem::path folder = std::filesystem::path(tensorboard_dir) / run_id;
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    auto refuse = [&](const std::string& why) {
        throw ConfigError("runtime.tensorboard_dir", "runtime.tensorboard_dir (\"" + tensorboard_dir + "\"): " + why +
                                                         "; choose a folder this user can write, or clear the field");
    };
    if (error || !std::filesystem::is_directory(folder))
        refuse(folder.string() + " cannot be created (" + (error ? error.message() : std::string("not a folder")) + ")");
    path_ = (folder / eventFileName(std::time(nullptr))).string();
    try {
        file_ = std::make_unique<EventFileWriter>(path_);
    } catch (const EventFileError& e) {
        refuse(e.what());
    }
}

TensorBoardRecorder::~TensorBoardRecorder() { stop(); }

void TensorBoardRecorder::start(MetricBus& bus, const std::string& config_json, double run_start,
                                std::optional<int64_t> resumed_from_step) {
    bus_ = &bus;
    inbox_ = bus.subscribe();
    thread_ = std::thread([this, config_json, run_start, resumed_from_step] {
        try {
            file_->addSessionStart(resumed_from_step ? *resumed_from_step + 1 : 0, static_cast<double>(std::time(nullptr)));
            writeConfig(*file_, config_json, run_start);
            file_->flush();
        } catch (const EventFileError&) {
            // loop() meets the same failure at its first write and reports it.
        }
        loop(run_start);
    });
}

void TensorBoardRecorder::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

void TensorBoardRecorder::loop(double run_start) {
    auto last_flush = std::chrono::steady_clock::now();
    bool failed = false;
    int64_t last_step = 0;  // where a failure is reported
    while (true) {
        const bool finishing = stop_.load() || inbox_->closed();
        BusBatch batch = finishing ? inbox_->drain() : inbox_->waitAndDrain(std::chrono::milliseconds(500));
        if (!failed) {
            try {
                for (const auto& point : batch.points) {
                    writePoint(*file_, point, run_start);
                    last_step = point.step;
                }
                for (const auto& event : batch.events) writeEvent(*file_, event, run_start);
                const auto now = std::chrono::steady_clock::now();
                if (finishing) {
                    file_->close();
                } else if (now - last_flush >= flush_period_) {
                    file_->flush();
                    last_flush = now;
                }
            } catch (const EventFileError& e) {
                failed = true;
                bus_->publish(RunEvent{last_step, 0.0, eventKindName(EventKind::Warning),
                                       std::string("the TensorBoard event file stopped being written: ") + e.what() +
                                           "; the run goes on and its store keeps every point "
                                           "(`trainbench-cli export RUN_ID --format tensorboard --out DIR` writes them)"});
            }
        }
        if (finishing) return;
    }
}

}  // namespace trainbench::tensorboard
