// The tracking CPU allocator: wraps c10's default CPU allocator, charges every allocation to
// the allocating thread's MemoryAccount, and enforces the account's budget by raising c10's
// OutOfMemoryError, the same type CUDA's caching allocator raises, so recovery code is one path.
//
// Every block carries a small header in front of the bytes it hands out:
//
//   inner block: [ BlockHeader | padding to kHeaderBytes ][ n bytes handed out ... ]
//                ^ from the inner allocator               ^ DataPtr data == DataPtr context
//
// so a DataPtr is "simple" (context == data), as Allocator::raw_allocate asserts, and one
// function (raw_deleter) frees any block from its data pointer alone. oneDNN takes its scratch
// and its ideep tensors through raw_allocate / raw_deallocate; CPUs with AVX-512 BF16 or AMX
// send every bf16 matrix product down that path.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "memory/memory_account.h"

namespace trainbench {
namespace {

thread_local MemoryAccount* t_account = nullptr;

// What a block's deleter needs: whom to credit and how much. `account` is null for blocks
// made on a thread that charges no account; they still carry the header, so that one deleter
// frees every block this allocator made.
struct BlockHeader {
    uint64_t magic;  // kMagic: the block is this allocator's
    MemoryAccount* account;
    int64_t bytes;
};
constexpr uint64_t kMagic = 0x7472616e62656e63;  // "tranbenc"

// The header's room keeps the handed-out bytes at c10's alignment (64 bytes on x86-64,
// what vectorised kernels and oneDNN expect).
constexpr size_t kHeaderBytes = c10::gAlignment;
static_assert(sizeof(BlockHeader) <= kHeaderBytes, "the header must fit in front of the aligned data");

// The allocator the blocks really come from, and its deleter (kept as a plain function so that
// a block freed while the process exits needs no allocator object); set once, before any block.
c10::Allocator* g_inner = nullptr;
c10::DeleterFnPtr g_inner_free = nullptr;

BlockHeader* headerOf(void* data) { return reinterpret_cast<BlockHeader*>(static_cast<char*>(data) - kHeaderBytes); }

// Freed blocks kept for the next allocation of the same size class. A training loop asks for
// the same sizes every micro-batch; malloc's aligned path, its splitting, merging and
// consolidation cost a small step more than its arithmetic (about a tenth of the training
// thread at tiny 2 x 8), where a kept block is a lookup. Bounded: blocks up to kLargestKept
// bytes, kKeptAtMost in all, the rest go back to malloc at once. A kept block charges no
// account: the accounts count what tensors hold, as the memory plan does.
class BlockCache {
public:
    static constexpr size_t kLargestKept = size_t(8) << 20;
    static constexpr size_t kKeptAtMost = size_t(256) << 20;

    // Sizes in 64-byte classes, so that near sizes share blocks.
    static size_t classOf(size_t bytes) { return (bytes + 63) & ~size_t(63); }

    // A kept block of this class, or null.
    void* take(size_t size_class) {
        if (size_class > kLargestKept) return nullptr;
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = kept_.find(size_class);
        if (found == kept_.end() || found->second.empty()) return nullptr;
        void* block = found->second.back();
        found->second.pop_back();
        held_ -= size_class;
        return block;
    }

    // Keeps the block if there is room (true), else the caller frees it.
    bool keep(void* block, size_t size_class) {
        if (size_class > kLargestKept) return false;
        std::lock_guard<std::mutex> lock(mutex_);
        if (held_ + size_class > kKeptAtMost) return false;
        kept_[size_class].push_back(block);
        held_ += size_class;
        return true;
    }

private:
    std::mutex mutex_;
    std::unordered_map<size_t, std::vector<void*>> kept_;
    size_t held_ = 0;
};

// Never destroyed: tensors freed while the process exits still come here.
BlockCache& blockCache() {
    static BlockCache* cache = new BlockCache;
    return *cache;
}

void deleteBlock(void* data) {
    if (!data) return;
    BlockHeader* header = headerOf(data);
    // A raw block the default allocator made before this one was installed has no header (the
    // bytes before it belong to malloc): it goes back to the allocator that made it.
    if (header->magic != kMagic) {
        g_inner_free(data);
        return;
    }
    header->magic = 0;
    if (header->account) header->account->current.fetch_sub(header->bytes, std::memory_order_relaxed);
    if (!blockCache().keep(header, BlockCache::classOf(static_cast<size_t>(header->bytes)))) g_inner_free(header);
}

std::string mebibytes(int64_t bytes) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
    return buffer;
}

// Reserves `bytes` on `account` (returns the bytes held with them), or raises c10's
// OutOfMemoryError when the budget would be passed.
int64_t reserve(MemoryAccount* account, int64_t bytes) {
    const int64_t now = account->current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    const int64_t limit = account->limit.load(std::memory_order_relaxed);
    const MemoryAccount* partner = account->shares_limit_with.load(std::memory_order_relaxed);
    const int64_t beside = partner ? partner->current.load(std::memory_order_relaxed) : 0;
    if (limit > 0 && now + beside > limit) {
        account->current.fetch_sub(bytes, std::memory_order_relaxed);
        TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", mebibytes(bytes), " with ",
                         mebibytes(now - bytes + beside), " in use of this rank's budget of ", mebibytes(limit),
                         " (runtime.memory_limit_mb)",
                         partner ? " (" + mebibytes(beside) +
                                       " of them in its other tier: on CPU ranks the device and offload's host memory "
                                       "are one budget)"
                                 : std::string());
    }
    return now;
}

// Once the block exists: the peak and the count move (a failed allocation moves neither).
void noteAllocated(MemoryAccount* account, int64_t now) {
    account->notePeak(now);
    account->allocations.fetch_add(1, std::memory_order_relaxed);
}

class TrackingCpuAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(size_t n) override {
        const c10::Device cpu(c10::DeviceType::CPU);
        // Zero bytes: no block, as the default allocator does; the deleter ignores null.
        if (n == 0) return c10::DataPtr(nullptr, nullptr, &deleteBlock, cpu);
        TORCH_CHECK_WITH(OutOfMemoryError, n <= size_t(std::numeric_limits<int64_t>::max()) - 2 * kHeaderBytes,
                         "CPU out of memory: cannot allocate ", n, " bytes");
        MemoryAccount* account = t_account;
        const int64_t bytes = static_cast<int64_t>(n);
        const int64_t now = account ? reserve(account, bytes) : 0;
        const size_t size_class = BlockCache::classOf(n);
        void* block = blockCache().take(size_class);
        try {
            if (!block) block = g_inner->raw_allocate(size_class + kHeaderBytes);
        } catch (...) {
            if (account) account->current.fetch_sub(bytes, std::memory_order_relaxed);
            throw;
        }
        if (account) noteAllocated(account, now);
        auto* header = static_cast<BlockHeader*>(block);
        header->magic = kMagic;
        header->account = account;
        header->bytes = bytes;
        void* data = static_cast<char*>(block) + kHeaderBytes;
        return c10::DataPtr(data, data, &deleteBlock, cpu);
    }

    c10::DeleterFnPtr raw_deleter() const override { return &deleteBlock; }

    void copy_data(void* dest, const void* src, std::size_t count) const override {
        default_copy_data(dest, src, count);
    }
};

}  // namespace

MemoryAccount* newMemoryAccount(int64_t limit_bytes) {
    auto* account = new MemoryAccount;  // lives to the end of the process, by design
    account->limit.store(limit_bytes);
    return account;
}

void shareMemoryLimit(MemoryAccount* a, MemoryAccount* b) {
    a->shares_limit_with.store(b);
    b->shares_limit_with.store(a);
    b->limit.store(a->limit.load());
}

void installTrackingCpuAllocator() {
    static std::once_flag once;
    std::call_once(once, [] {
        g_inner = c10::GetDefaultCPUAllocator();
        g_inner_free = g_inner->raw_deleter();
        // Every c10 build's default CPU allocator frees by pointer; one that could not would
        // leave allocations untracked rather than fail the program at start.
        if (!g_inner_free) return;
        // Priority 1 outranks the default registration (0). Never destroyed: c10 keeps the
        // pointer, and tensors freed while the process exits still come here.
        c10::SetCPUAllocator(new TrackingCpuAllocator, 1);
    });
}

namespace {
// Installed when the program starts, before any tensor exists: a raw block taken from the
// default allocator and handed back through this one (oneDNN keeps some across calls) would
// have no header. libc10 is loaded and initialised before this object's static initialiser runs.
[[maybe_unused]] const bool g_installed_at_start = (installTrackingCpuAllocator(), true);
}  // namespace

ScopedMemoryAccount::ScopedMemoryAccount(MemoryAccount* account) : previous_(t_account) {
    installTrackingCpuAllocator();
    t_account = account;
}

ScopedMemoryAccount::~ScopedMemoryAccount() { t_account = previous_; }

MemoryAccount* currentMemoryAccount() { return t_account; }

}  // namespace trainbench
