// RunSeries: one run's metric points routed into named series (loss and its EMA, eval loss, grad norm, lr, throughput, the multi-token-prediction losses, memory per device, the entropy floor), without a widget.
#include "runs/run_series.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "common/ema_smoother.h"
#include "trainbench/metric_keys.h"

namespace trainbench::gui {

namespace {

// A curve with a key of its own, and whether the live plots draw its EMA (the noisy ones).
struct Route {
    SeriesName name;
    const char* key;
    bool smoothed;
};
constexpr Route kRoutes[] = {
    {SeriesName::Loss, metric::kLoss, true},
    {SeriesName::EvalLoss, metric::kEvalLoss, false},
    {SeriesName::GradNorm, metric::kGradNorm, true},
    {SeriesName::LearningRate, metric::kLearningRate, false},
    {SeriesName::Throughput, metric::kTokensPerSecond, false},
    {SeriesName::MtpLoss, "train/mtp_loss/1", true},
};
static_assert(std::size(kRoutes) == kSeriesNameCount, "one route per SeriesName");

const Route* routeOf(std::string_view key) {
    for (const Route& route : kRoutes)
        if (key == route.key) return &route;
    return nullptr;
}

bool isKeptMemoryKey(std::string_view key) {
    const std::vector<std::string>& io = RunSeries::ioKeys();
    if (std::find(io.begin(), io.end(), key) != io.end()) return true;
    const auto parsed = metric::parseMemoryKey(key);
    if (!parsed) return false;
    const std::vector<std::string>& kinds = RunSeries::memoryKinds();
    return std::find(kinds.begin(), kinds.end(), parsed->what) != kinds.end();
}

// train/mtp_loss/<k> with k >= 2 (the first module's has a route of its own).
bool isDeeperMtpKey(std::string_view key) {
    constexpr std::string_view prefix = "train/mtp_loss/";
    if (key.substr(0, prefix.size()) != prefix) return false;
    const std::string_view depth = key.substr(prefix.size());
    if (depth.empty() || depth == "1" || depth.front() == '0') return false;
    return std::all_of(depth.begin(), depth.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

const std::vector<std::string>& RunSeries::memoryKinds() {
    // What a device holds; its free bytes and its utilisation are no memory curve. MetricPlots
    // gives each kind a line style of its own (its kMemoryKinds): a new kind goes in both.
    static const std::vector<std::string> kinds{metric::kAllocatedBytes, metric::kPeakBytes, metric::kReservedBytes,
                                                metric::kDeviceUsedBytes, metric::kHostBytes};
    return kinds;
}

const std::vector<std::string>& RunSeries::ioKeys() {
    // What every rank moved in a step, drawn in the memory row (bytes too) beside what the
    // devices hold; MetricPlots' kIoKinds gives each a line style, in this order.
    static const std::vector<std::string> keys{metric::kHostToDeviceBytes, metric::kDeviceToHostBytes,
                                               metric::kOffloadReadBytes, metric::kOffloadWriteBytes};
    return keys;
}

RunSeries::RunSeries(double smoothing_weight)
    : smoothing_weight_(EmaSmoother(smoothing_weight).weight()),
      entropy_floor_(std::numeric_limits<double>::quiet_NaN()) {
    for (const Route& route : kRoutes)
        named_[static_cast<size_t>(route.name)] = MetricSeries(route.smoothed, smoothing_weight_);
}

RunSeries RunSeries::ofKey(const std::string& key, double smoothing_weight) {
    RunSeries series(smoothing_weight);
    series.single_key_ = true;
    series.only_key_ = key;
    // Compare draws every curve as its EMA over the raw points, whatever the key.
    series.own_ = MetricSeries(/*smoothed=*/true, series.smoothing_weight_);
    return series;
}

SeriesUpdate RunSeries::addPoints(std::span<const MetricPoint> points) {
    SeriesUpdate update;
    if (single_key_) {
        for (const MetricPoint& point : points) {
            if (point.key != only_key_) continue;
            const double tokens = static_cast<double>(point.tokens);
            own_.append(point, tokens);
            last_step_ = std::max(last_step_, point.step);
            last_tokens_ = std::max(last_tokens_, tokens);
            last_wall_ = std::max(last_wall_, point.wall_time);
            update.advanced = true;
        }
        return update;
    }

    // Tokens first: the points of a step carry the step, and train/tokens says how many
    // tokens that step ends at, whichever order the batch lists them in.
    positions_.noteTokens(points);
    for (const MetricPoint& point : points) {
        if (point.key == metric::kEntropyFloor) {
            entropy_floor_ = point.value;
            update.entropy_floor = true;
            continue;  // a property of the data, not a step of the run
        }
        if (point.key == metric::kGlobalBatch) {
            step_sequences_ = point.value;  // an adaptive run's steps so far say how long it is
            continue;
        }
        const double tokens = positions_.tokensAt(point.step, static_cast<double>(point.tokens));
        if (MetricSeries* series = liveSeriesFor(point.key)) {
            series->append(point, tokens);
            if (point.key == metric::kLoss) positions_.noteWall(point.step, point.wall_time);
        } else if (point.key != metric::kTokens) {
            continue;
        }
        last_step_ = std::max(last_step_, point.step);
        last_tokens_ = std::max(last_tokens_, tokens);
        last_wall_ = std::max(last_wall_, point.wall_time);
        update.advanced = true;
    }
    return update;
}

MetricSeries* RunSeries::liveSeriesFor(const std::string& key) {
    if (const Route* route = routeOf(key)) return &named_[static_cast<size_t>(route->name)];
    if (isDeeperMtpKey(key)) {
        auto [found, added] = deeper_mtp_.try_emplace(key, /*smoothed=*/true, smoothing_weight_);
        if (added) deeper_mtp_order_.push_back(key);
        return &found->second;
    }
    if (!isKeptMemoryKey(key)) return nullptr;
    auto [found, added] = memory_.try_emplace(key, /*smoothed=*/false, smoothing_weight_);
    if (added) memory_order_.push_back(key);
    return &found->second;
}

void RunSeries::clear() {
    for (MetricSeries& series : named_) series.clear();
    own_.clear();
    memory_.clear();
    memory_order_.clear();
    deeper_mtp_.clear();
    deeper_mtp_order_.clear();
    positions_.clear();
    entropy_floor_ = std::numeric_limits<double>::quiet_NaN();
    step_sequences_ = 0;
    last_step_ = 0;
    last_tokens_ = 0;
    last_wall_ = 0;
}

bool RunSeries::keeps(std::string_view key) const {
    if (single_key_) return key == only_key_;
    return routeOf(key) != nullptr || isKeptMemoryKey(key) || isDeeperMtpKey(key);
}

const MetricSeries* RunSeries::seriesOfKey(std::string_view key) const {
    if (single_key_) return key == only_key_ ? &own_ : nullptr;
    if (const Route* route = routeOf(key)) return &named_[static_cast<size_t>(route->name)];
    if (const auto deeper = deeper_mtp_.find(key); deeper != deeper_mtp_.end()) return &deeper->second;
    const auto found = memory_.find(key);
    return found == memory_.end() ? nullptr : &found->second;
}

void RunSeries::setSmoothingWeight(double weight) {
    smoothing_weight_ = EmaSmoother(weight).weight();
    // The full series is re-smoothed, never a downsampled one; a series without an EMA keeps its values.
    for (MetricSeries& series : named_) series.setSmoothingWeight(smoothing_weight_);
    for (auto& [key, series] : memory_) series.setSmoothingWeight(smoothing_weight_);
    for (auto& [key, series] : deeper_mtp_) series.setSmoothingWeight(smoothing_weight_);
    own_.setSmoothingWeight(smoothing_weight_);
}

}  // namespace trainbench::gui
