// The roll call: one key per rank under "trainbench/roll_call/", polled until all are there or
// the grace has passed.
#include "comm/roll_call.h"

#include <thread>

namespace trainbench {
namespace {

std::string keyOf(int rank) { return "trainbench/roll_call/" + std::to_string(rank); }

}  // namespace

void RollCall::answer(int rank) {
    try {
        store_->set(keyOf(rank), std::vector<uint8_t>{1});
    } catch (const std::exception&) {  // the store's server has ended: nobody is listening
    }
}

std::vector<int> RollCall::missing(int world_size, int self, std::chrono::milliseconds grace) {
    const auto deadline = std::chrono::steady_clock::now() + grace;
    std::vector<int> absent;
    for (int r = 0; r < world_size; ++r)
        if (r != self) absent.push_back(r);
    try {
        while (true) {
            std::vector<int> still;
            for (int r : absent)
                if (!store_->check({keyOf(r)})) still.push_back(r);
            absent = std::move(still);
            if (absent.empty() || std::chrono::steady_clock::now() >= deadline) return absent;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    } catch (const std::exception&) {  // the store is unreachable: no rank can be vouched for
        return absent;
    }
}

std::string describeRanks(const std::vector<int>& ranks) {
    if (ranks.empty()) return "no rank";
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) {
        if (i > 0) text += i + 1 == ranks.size() ? " and " : ", ";
        text += std::to_string(ranks[i]);
    }
    return text;
}

}  // namespace trainbench
