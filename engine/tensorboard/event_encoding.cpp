// Event messages: varints, tags, little-endian fixed-width numbers and length-prefixed submessages.
#include "tensorboard/event_encoding.h"

#include <bit>
#include <string_view>

namespace trainbench::tensorboard {
namespace {

enum WireType : uint32_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

void putVarint(std::string& out, uint64_t value) {
    while (value >= 0x80) {
        out.push_back(static_cast<char>((value & 0x7F) | 0x80));
        value >>= 7;
    }
    out.push_back(static_cast<char>(value));
}

void putTag(std::string& out, uint32_t field, WireType type) { putVarint(out, (field << 3) | type); }

template <typename Bits>
void putLittleEndian(std::string& out, Bits bits) {
    for (size_t i = 0; i < sizeof(Bits); ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void putBytes(std::string& out, uint32_t field, std::string_view bytes) {
    putTag(out, field, LengthDelimited);
    putVarint(out, bytes.size());
    out.append(bytes);
}

// Event{wall_time, step}, the fields every event below starts with.
std::string eventAt(int64_t step, double wall_time) {
    std::string event;
    if (wall_time != 0) {
        putTag(event, 1, Fixed64);
        putLittleEndian(event, std::bit_cast<uint64_t>(wall_time));
    }
    if (step != 0) {
        putTag(event, 2, Varint);
        putVarint(event, static_cast<uint64_t>(step));  // a negative step: ten bytes, two's complement
    }
    return event;
}

// Event{wall_time, step, summary: Summary{value: [value]}}.
std::string summaryEvent(int64_t step, double wall_time, const std::string& value) {
    std::string summary;
    putBytes(summary, 1, value);
    std::string event = eventAt(step, wall_time);
    putBytes(event, 5, summary);
    return event;
}

}  // namespace

std::string fileVersionEvent(double wall_time) {
    std::string event;
    putTag(event, 1, Fixed64);
    putLittleEndian(event, std::bit_cast<uint64_t>(wall_time));
    putBytes(event, 3, "brain.Event:2");
    return event;
}

std::string scalarEvent(const std::string& tag, int64_t step, double wall_time, float value) {
    std::string v;
    putBytes(v, 1, tag);
    putTag(v, 2, Fixed32);  // in a oneof: written even when 0
    putLittleEndian(v, std::bit_cast<uint32_t>(value));
    return summaryEvent(step, wall_time, v);
}

std::string textEvent(const std::string& tag, int64_t step, double wall_time, const std::string& text) {
    std::string tensor;
    putTag(tensor, 1, Varint);
    putVarint(tensor, 7);           // DT_STRING
    putBytes(tensor, 2, "");        // TensorShapeProto without dims: a scalar
    putBytes(tensor, 8, text);
    std::string plugin_data;
    putBytes(plugin_data, 1, "text");  // content: an empty TextPluginData (version 0)
    std::string metadata;
    putBytes(metadata, 1, plugin_data);
    std::string v;
    putBytes(v, 1, tag);
    putBytes(v, 8, tensor);
    putBytes(v, 9, metadata);
    return summaryEvent(step, wall_time, v);
}

std::string sessionStartEvent(int64_t step, double wall_time) {
    std::string session_log;
    putTag(session_log, 1, Varint);
    putVarint(session_log, 1);  // START
    std::string event = eventAt(step, wall_time);
    putBytes(event, 7, session_log);
    return event;
}

}  // namespace trainbench::tensorboard
