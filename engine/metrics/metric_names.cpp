// The parsers and name tables of metric_keys.h and event_kind.h.
#include "trainbench/event_kind.h"
#include "trainbench/metric_keys.h"

#include <utility>

namespace trainbench {
namespace {

constexpr std::pair<EventKind, const char*> kEventNames[] = {
    {EventKind::Status, "status"},
    {EventKind::Warning, "warning"},
    {EventKind::Precision, "precision"},
    {EventKind::OutOfMemoryBackoff, "oom_backoff"},
    {EventKind::BatchChange, "batch_change"},
    {EventKind::SkippedStep, "skipped_step"},
    {EventKind::Checkpoint, "checkpoint"},
    {EventKind::CheckpointFailed, "checkpoint_failed"},
    {EventKind::Advice, "advice"},
    {EventKind::StoreUnwritable, "store_unwritable"},
    {EventKind::StoreWritable, "store_writable"},
    {EventKind::Sample, "sample"},
};

// A decimal number at the front of `text`, taken off it.
bool takeNumber(std::string_view& text, int* out) {
    size_t digits = 0;
    long long value = 0;
    while (digits < text.size() && digits < 9 && text[digits] >= '0' && text[digits] <= '9')
        value = value * 10 + (text[digits++] - '0');
    if (digits == 0) return false;
    text.remove_prefix(digits);
    *out = static_cast<int>(value);
    return true;
}

bool takePrefix(std::string_view& text, std::string_view prefix) {
    if (text.substr(0, prefix.size()) != prefix) return false;
    text.remove_prefix(prefix.size());
    return true;
}

}  // namespace

const char* eventKindName(EventKind kind) {
    for (const auto& [k, name] : kEventNames)
        if (k == kind) return name;
    return "unknown";
}

std::optional<EventKind> eventKindNamed(std::string_view name) {
    for (const auto& [k, known] : kEventNames)
        if (name == known) return k;
    return std::nullopt;
}

namespace metric {

std::optional<LoadKey> parseLoadKey(std::string_view key) {
    LoadKey out{};
    if (takePrefix(key, "moe/rank")) {
        out.kind = LoadKey::Kind::RankReceived;
        if (takeNumber(key, &out.layer) && key == "/tokens_received") return out;
        return std::nullopt;
    }
    if (!takePrefix(key, "moe/layer") || !takeNumber(key, &out.layer)) return std::nullopt;
    if (key == "/load_max_over_mean") {
        out.kind = LoadKey::Kind::MaxOverMean;
        return out;
    }
    out.kind = LoadKey::Kind::ExpertTokens;
    if (takePrefix(key, "/expert") && takeNumber(key, &out.expert) && key == "/tokens") return out;
    return std::nullopt;
}

}  // namespace metric
}  // namespace trainbench
