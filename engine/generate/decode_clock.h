// The wall time the decoding loops report (prefill and decode seconds).
#pragma once

#include <chrono>

namespace trainbench {

inline double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace trainbench
