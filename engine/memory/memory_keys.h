// Metric keys of memory samples: mem/<device>/<what>, one device name per rank.
#pragma once

#include <string>

namespace trainbench {

// "cpu" ranks are rank threads sharing the host: each gets its own name (cpu0, cpu1, ...) so
// their curves stay apart; "cuda:i" is cuda<i>.
inline std::string memoryKeyPrefix(const std::string& device, int rank) {
    if (device.rfind("cuda:", 0) == 0) return "mem/cuda" + device.substr(5) + "/";
    return "mem/cpu" + std::to_string(rank) + "/";
}

// The CUDA device index of a resolved rank device ("cuda:i"), or -1 for "cpu".
inline int cudaDeviceIndex(const std::string& device) {
    return device.rfind("cuda:", 0) == 0 ? std::stoi(device.substr(5)) : -1;
}

}  // namespace trainbench
