// MemoryAccount: the bytes one rank holds on the CPU, counted by the tracking allocator.
#pragma once

#include <atomic>
#include <cstdint>

namespace trainbench {

// Thread contract: any thread may allocate or free against an account (a tensor can die on
// another thread than the one that made it); every field is atomic. Accounts are never
// destroyed while a tensor might still point at them: see newMemoryAccount().
struct MemoryAccount {
    std::atomic<int64_t> current{0};
    std::atomic<int64_t> peak{0};
    std::atomic<int64_t> limit{0};  // bytes; 0: unlimited
    std::atomic<int64_t> allocations{0};
    // Another account whose bytes count against this one's limit too (nullptr: none). On CPU
    // ranks the device and the host tier are one memory: each names the other, so that
    // runtime.memory_limit_mb holds both as the planner counts them, the peaks kept apart.
    std::atomic<MemoryAccount*> shares_limit_with{nullptr};

    // Starts a new peak window (per optimizer step) at the bytes held now.
    void resetPeak() { peak.store(current.load()); }
    // Raises the peak to `now` when that is more (any thread may hold the account).
    void notePeak(int64_t now) {
        int64_t seen = peak.load(std::memory_order_relaxed);
        while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
        }
    }
};

// A fresh account that lives until the process ends (a few dozen bytes per rank and session):
// tensors may outlive the session that made them, and their frees must find the account.
MemoryAccount* newMemoryAccount(int64_t limit_bytes = 0);

// Makes `a` and `b` one budget, `a`'s limit: each one's allocations fail once both together
// would pass it.
void shareMemoryLimit(MemoryAccount* a, MemoryAccount* b);

// Makes CPU allocations on this thread count against `account` for the scope's lifetime
// (nullptr: count against none). The tracking allocator is installed when the program starts
// (and by the first scope, should that come first).
class ScopedMemoryAccount {
public:
    explicit ScopedMemoryAccount(MemoryAccount* account);
    ~ScopedMemoryAccount();
    ScopedMemoryAccount(const ScopedMemoryAccount&) = delete;
    ScopedMemoryAccount& operator=(const ScopedMemoryAccount&) = delete;

private:
    MemoryAccount* previous_;
};

// The account this thread allocates against, or nullptr.
MemoryAccount* currentMemoryAccount();

// Installs the tracking allocator as c10's CPU allocator (idempotent, thread-safe).
void installTrackingCpuAllocator();

}  // namespace trainbench
