// Workspace: scratch device memory a launcher may need (packed operands, fp32x3 small
// parts, split-K partial tiles, counters). Owned by whoever launches (a Launch, the
// device-array pool), grown on demand and reused, so that a timed loop never allocates.
// Slots are fixed per purpose so that two buffers of one launch never alias:
//   0 packed A, 1 A's small parts, 2 packed B, 3 partial tiles, 4 counters,
//   5 split-K partial slabs, 7 fp32x3's fallback list.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fastgemm {
namespace cuda {

class Workspace {
public:
    static constexpr int kSlots = 8;
    Workspace() = default;
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;
    ~Workspace();
    // At least `bytes` of device memory for `slot` (0 .. kSlots - 1), 256-byte aligned.
    // Growing a slot waits for the device first: queued work may still read the old buffer.
    void* get(int slot, size_t bytes);
    // How many times get() has been called: a launch that leaves it unchanged touched no
    // scratch memory, so nothing later has to be ordered after it.
    uint64_t uses() const { return uses_; }
    // Changes whenever a buffer is replaced (grown): work recorded with the old pointers
    // (a CUDA graph) must not run again.
    uint64_t generation() const { return generation_; }

private:
    uint64_t uses_ = 0;
    uint64_t generation_ = 0;
    void* ptr_[kSlots] = {};
    size_t size_[kSlots] = {};
};

}  // namespace cuda
}  // namespace fastgemm
