// The tracking CPU allocator: wraps c10's default CPU allocator, charges every allocation to
// the allocating thread's MemoryAccount, and enforces the account's budget by raising c10's
// OutOfMemoryError, the same type CUDA's caching allocator raises, so recovery code is one path.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <string>

#include "memory/memory_account.h"

namespace trainbench {
namespace {

thread_local MemoryAccount* t_account = nullptr;

// What a tracked allocation carries to its deleter: the real allocation and whom to credit.
struct TrackedContext {
    c10::DataPtr inner;
    MemoryAccount* account;
    int64_t bytes;
};

void deleteTracked(void* context) {
    auto* tracked = static_cast<TrackedContext*>(context);
    tracked->account->current.fetch_sub(tracked->bytes, std::memory_order_relaxed);
    delete tracked;  // frees `inner` through the default allocator's deleter
}

std::string mebibytes(int64_t bytes) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
    return buffer;
}

class TrackingCpuAllocator final : public c10::Allocator {
public:
    explicit TrackingCpuAllocator(c10::Allocator* inner) : inner_(inner) {}

    c10::DataPtr allocate(size_t n) override {
        MemoryAccount* account = t_account;
        if (!account) return inner_->allocate(n);
        const int64_t bytes = static_cast<int64_t>(n);
        const int64_t now = account->current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
        const int64_t limit = account->limit.load(std::memory_order_relaxed);
        if (limit > 0 && now > limit) {
            account->current.fetch_sub(bytes, std::memory_order_relaxed);
            TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", mebibytes(bytes), " with ",
                             mebibytes(now - bytes), " in use of this rank's budget of ", mebibytes(limit),
                             " (runtime.memory_limit_mb)");
        }
        int64_t peak = account->peak.load(std::memory_order_relaxed);
        while (now > peak && !account->peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
        }
        account->allocations.fetch_add(1, std::memory_order_relaxed);
        c10::DataPtr inner;
        try {
            inner = inner_->allocate(n);
        } catch (...) {
            account->current.fetch_sub(bytes, std::memory_order_relaxed);
            throw;
        }
        void* data = inner.get();
        const c10::Device device = inner.device();
        auto* context = new TrackedContext{std::move(inner), account, bytes};
        return c10::DataPtr(data, context, &deleteTracked, device);
    }

    void copy_data(void* dest, const void* src, std::size_t count) const override {
        default_copy_data(dest, src, count);
    }

private:
    c10::Allocator* inner_;
};

}  // namespace

MemoryAccount* newMemoryAccount(int64_t limit_bytes) {
    auto* account = new MemoryAccount;  // lives to the end of the process, by design
    account->limit.store(limit_bytes);
    return account;
}

void installTrackingCpuAllocator() {
    static std::once_flag once;
    std::call_once(once, [] {
        // Priority 1 outranks the default registration (0); c10 never frees a set allocator.
        static TrackingCpuAllocator tracking(c10::GetDefaultCPUAllocator());
        c10::SetCPUAllocator(&tracking, 1);
    });
}

ScopedMemoryAccount::ScopedMemoryAccount(MemoryAccount* account) : previous_(t_account) {
    installTrackingCpuAllocator();
    t_account = account;
}

ScopedMemoryAccount::~ScopedMemoryAccount() { t_account = previous_; }

MemoryAccount* currentMemoryAccount() { return t_account; }

}  // namespace trainbench
