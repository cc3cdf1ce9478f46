// safetensors reader and writer on nlohmann/json (the format is small enough to own).
#include "model/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "model/safetensors_header.h"
#include "trainbench/config_io.h"

namespace trainbench {
namespace {

struct DtypeName {
    torch::ScalarType type;
    const char* name;
};
constexpr DtypeName kDtypes[] = {
    {torch::kFloat32, "F32"}, {torch::kFloat64, "F64"}, {torch::kBFloat16, "BF16"}, {torch::kFloat16, "F16"},
    {torch::kInt64, "I64"},   {torch::kInt32, "I32"},   {torch::kInt16, "I16"},     {torch::kUInt8, "U8"},
    {torch::kBool, "BOOL"},   {torch::kFloat8_e4m3fn, "F8_E4M3"},
};

const char* dtypeName(torch::ScalarType type) {
    for (const auto& d : kDtypes)
        if (d.type == type) return d.name;
    throw std::runtime_error(std::string("safetensors: cannot store dtype ") + c10::toString(type));
}

[[noreturn]] void bad(const std::string& path, const std::string& what) {
    throw ConfigError("", path + ": not a valid safetensors file: " + what +
                              "; the file may be truncated or not written by trainbench (write a new one with "
                              "`trainbench-cli init`)");
}


}  // namespace

void writeSafetensors(const std::string& path, const NamedTensors& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        nlohmann::ordered_json meta = nlohmann::ordered_json::object();
        for (const auto& [k, v] : metadata) meta[k] = v;
        header["__metadata__"] = meta;
    }
    std::vector<torch::Tensor> blobs;
    int64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        auto cpu = tensor.detach().to(torch::kCPU).contiguous();
        const int64_t bytes = cpu.numel() * static_cast<int64_t>(cpu.element_size());
        header[name] = {{"dtype", dtypeName(cpu.scalar_type())},
                        {"shape", cpu.sizes().vec()},
                        {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
        blobs.push_back(cpu);
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
    const uint64_t length = text.size();

    const std::string temporary = path + ".partial";
    FILE* out = std::fopen(temporary.c_str(), "wb");
    if (!out) throw std::runtime_error(path + ": cannot write (" + std::strerror(errno) + ")");
    unsigned char length_bytes[8];
    for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(length >> (8 * i));
    bool ok = std::fwrite(length_bytes, 1, 8, out) == 8 && std::fwrite(text.data(), 1, text.size(), out) == text.size();
    for (const auto& blob : blobs) {
        const size_t bytes = blob.numel() * blob.element_size();
        ok = ok && std::fwrite(blob.data_ptr(), 1, bytes, out) == bytes;
    }
    ok = std::fflush(out) == 0 && ok;
    ok = ::fsync(fileno(out)) == 0 && ok;
    ok = std::fclose(out) == 0 && ok;
    if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
        std::remove(temporary.c_str());
        throw std::runtime_error(path + ": writing failed (" + std::strerror(errno) + ")");
    }
}

namespace {

// The checked header of an open file; `in` is left after it.
std::vector<SafetensorsEntry> readEntries(std::ifstream& in, const std::string& path, uint64_t& header_length) {
    if (!in) throw ConfigError("", path + ": cannot open the weights file; check the path");
    in.seekg(0, std::ios::end);
    const uint64_t size = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
    unsigned char length_bytes[8] = {};
    in.read(reinterpret_cast<char*>(length_bytes), 8);
    header_length = safetensorsHeaderLength(length_bytes, size, path);
    std::string text(header_length, '\0');
    in.read(text.data(), static_cast<std::streamsize>(header_length));
    return parseSafetensorsHeader(text, size - 8 - header_length, path);
}

}  // namespace

std::string shapeText(torch::IntArrayRef shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::vector<SafetensorsEntry> readSafetensorsEntries(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    uint64_t length = 0;
    return readEntries(in, path, length);
}

NamedTensors readSafetensors(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    uint64_t length = 0;
    const std::vector<SafetensorsEntry> entries = readEntries(in, path, length);
    NamedTensors out;
    for (const SafetensorsEntry& entry : entries) {
        torch::ScalarType type = torch::kFloat32;
        for (const auto& d : kDtypes)
            if (entry.dtype == d.name) type = d.type;
        auto tensor = torch::empty(entry.shape, torch::TensorOptions().dtype(type));
        in.seekg(static_cast<std::streamoff>(8 + length + entry.begin));
        in.read(static_cast<char*>(tensor.data_ptr()), static_cast<std::streamsize>(entry.end - entry.begin));
        if (!in) bad(path, "entry '" + entry.name + "' could not be read");
        out.emplace_back(entry.name, tensor);
    }
    return out;
}

void requireSameTensors(const NamedTensors& target, const std::map<std::string, std::vector<int64_t>>& shapes,
                        const std::string& origin) {
    for (const auto& [name, destination] : target) {
        auto it = shapes.find(name);
        if (it == shapes.end())
            throw ConfigError("", origin + ": tensor '" + name + "' is missing; the file was written for a different "
                                           "model config");
        if (c10::IntArrayRef(it->second) != destination.sizes())
            throw ConfigError("", origin + ": tensor '" + name + "' has shape " + shapeText(it->second) +
                                      " but the model config needs " + shapeText(destination.sizes()) +
                                      "; use the config the file was written with");
    }
    if (shapes.size() != target.size()) {
        std::map<std::string, bool> known;
        for (const auto& [name, t] : target) known[name] = true;
        for (const auto& [name, shape] : shapes)
            if (!known.count(name))
                throw ConfigError("", origin + ": unexpected tensor '" + name + "' that the model config does not have");
    }
}

void loadIntoStateDict(const NamedTensors& target, const NamedTensors& tensors, const std::string& origin) {
    std::map<std::string, const torch::Tensor*> given;
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& [name, tensor] : tensors) {
        given[name] = &tensor;
        shapes[name] = tensor.sizes().vec();
    }
    requireSameTensors(target, shapes, origin);
    torch::NoGradGuard no_grad;
    for (const auto& [name, destination] : target) {
        auto& source = *given[name];
        destination.copy_(source.to(destination.device(), destination.scalar_type()));
    }
}

}  // namespace trainbench
