// BufferPool and DeviceMatrix (see buffer_pool.h). Metal calls: newBufferWithLength:options:,
// newBufferWithBytesNoCopy:length:options:deallocator:, contents (docs/architecture.md: Buffers).
#import "metal/buffer_pool.h"

#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "core/errors.hpp"
#include "metal/host_rules.h"

namespace fastgemm::metal_host {

namespace {

// Idle pooled memory kept for reuse; beyond this the largest idle buffers are let go.
constexpr size_t kMaxIdleBytes = size_t(1) << 30;

}  // namespace

BufferPool::BufferPool(id<MTLDevice> device) : device_(device) {
    // Apple silicon pages are 16 KiB; ask rather than assume (docs/architecture.md: Buffers).
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) page_ = size_t(page);
}

id<MTLBuffer> BufferPool::acquire(size_t bytes) {
    const size_t length = round_up(bytes ? bytes : 1, page_);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = free_.lower_bound(length);
        // Reuse a free buffer unless it would waste more than half of itself.
        if (it != free_.end() && it->first <= 2 * length) {
            id<MTLBuffer> b = it->second;
            idle_bytes_ -= it->first;
            free_.erase(it);
            return b;
        }
    }
    id<MTLBuffer> b = [device_ newBufferWithLength:length options:MTLResourceStorageModeShared];
    if (b == nil) {
        throw KernelError("Metal could not allocate a " + std::to_string(length) +
                          "-byte shared buffer (device maxBufferLength is " +
                          std::to_string(static_cast<unsigned long long>(device_.maxBufferLength)) +
                          " bytes)");
    }
    return b;
}

void BufferPool::release(id<MTLBuffer> buffer) {
    if (buffer == nil) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t length = size_t(buffer.length);
    free_.emplace(length, buffer);
    idle_bytes_ += length;
    while (idle_bytes_ > kMaxIdleBytes && !free_.empty()) {
        auto largest = std::prev(free_.end());
        idle_bytes_ -= largest->first;
        free_.erase(largest);  // ARC releases the buffer
    }
}

id<MTLBuffer> BufferPool::wrap(const void* p, size_t length) {
    // The caller keeps ownership, so no deallocator (nil); the buffer must not outlive the
    // array, which Kernel::bind's contract guarantees (operands live until the Launch dies).
    return [device_ newBufferWithBytesNoCopy:const_cast<void*>(p)
                                      length:length
                                     options:MTLResourceStorageModeShared
                                 deallocator:nil];
}

DeviceMatrix::DeviceMatrix(BufferPool& pool, const float* p, int64_t rows, int64_t cols,
                           int64_t ld, size_t needed_bytes, bool copy_in)
    : pool_(&pool), rows_(rows), cols_(cols), ld_(ld) {
    const size_t span_elems = rows > 0 && cols > 0 ? size_t((rows - 1) * ld + cols) : 0;
    const size_t span_bytes = span_elems * sizeof(float);
    const size_t needed = needed_bytes > span_bytes ? needed_bytes : span_bytes;
    if (const size_t length = no_copy_length(p, span_bytes, needed, pool.page_size())) {
        buffer_ = pool.wrap(p, length);
        if (buffer_ != nil) return;  // else fall back to a copy
    }
    buffer_ = pool.acquire(needed ? needed : sizeof(float));
    pooled_ = true;
    if (copy_in && span_bytes) std::memcpy(buffer_.contents, p, span_bytes);
}

DeviceMatrix::~DeviceMatrix() { give_back(); }

DeviceMatrix::DeviceMatrix(DeviceMatrix&& o) noexcept
    : pool_(o.pool_), buffer_(o.buffer_), pooled_(o.pooled_), rows_(o.rows_), cols_(o.cols_),
      ld_(o.ld_) {
    o.buffer_ = nil;
    o.pooled_ = false;
}

DeviceMatrix& DeviceMatrix::operator=(DeviceMatrix&& o) noexcept {
    if (this != &o) {
        give_back();
        pool_ = o.pool_, buffer_ = o.buffer_, pooled_ = o.pooled_;
        rows_ = o.rows_, cols_ = o.cols_, ld_ = o.ld_;
        o.buffer_ = nil;
        o.pooled_ = false;
    }
    return *this;
}

void DeviceMatrix::give_back() {
    if (pooled_ && pool_ && buffer_ != nil) pool_->release(buffer_);
    buffer_ = nil;
    pooled_ = false;
}

void DeviceMatrix::copy_back(float* dst) const {
    if (!pooled_ || buffer_ == nil) return;
    const float* src = static_cast<const float*>(buffer_.contents);
    for (int64_t i = 0; i < rows_; ++i)
        std::memcpy(dst + i * ld_, src + i * ld_, size_t(cols_) * sizeof(float));
}

void DeviceMatrix::zero_elements() {
    if (buffer_ == nil) return;
    float* base = static_cast<float*>(buffer_.contents);
    for (int64_t i = 0; i < rows_; ++i) std::memset(base + i * ld_, 0, size_t(cols_) * sizeof(float));
}

}  // namespace fastgemm::metal_host
