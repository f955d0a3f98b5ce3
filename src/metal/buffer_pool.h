// GPU views of the caller's operands (Objective-C++ only).
//
// Apple silicon shares memory between CPU and GPU, so a page-aligned caller array is wrapped
// in place with newBufferWithBytesNoCopy:length:options:deallocator: (fastgemm.empty/zeros
// return such arrays). Anything else is copied into a shared-storage buffer taken from a pool
// that keeps buffers across calls, so repeated calls and benchmark iterations allocate nothing.
// The decision itself (alignment, whole pages) is host_rules.h's no_copy_length.
#pragma once

#import <Metal/Metal.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace fastgemm::metal_host {

class BufferPool {
public:
    explicit BufferPool(id<MTLDevice> device);

    size_t page_size() const { return page_; }
    // A shared-storage buffer of at least `bytes` (whole pages), reused when one is free.
    // Throws KernelError when Metal cannot allocate it.
    id<MTLBuffer> acquire(size_t bytes);
    void release(id<MTLBuffer> buffer);
    // The caller's memory as a buffer without a copy, or nil when Metal refuses it. `length`
    // must come from no_copy_length (page-aligned pointer, whole pages).
    id<MTLBuffer> wrap(const void* p, size_t length);

private:
    id<MTLDevice> device_;
    size_t page_ = 16384;
    std::mutex mutex_;
    std::multimap<size_t, id<MTLBuffer>> free_;  // by length
    size_t idle_bytes_ = 0;
};

// One operand on the GPU for the life of a Launch: the caller's rows wrapped or copied.
// Rows are `rows` x `cols` floats with row stride `ld`; only those elements are ever copied
// back, so the gaps between rows of a strided view stay the caller's.
class DeviceMatrix {
public:
    DeviceMatrix() = default;
    // `needed_bytes` is what the consumer may address (>= the span); see no_copy_length.
    DeviceMatrix(BufferPool& pool, const float* p, int64_t rows, int64_t cols, int64_t ld,
                 size_t needed_bytes, bool copy_in);
    ~DeviceMatrix();
    DeviceMatrix(DeviceMatrix&& other) noexcept;
    DeviceMatrix& operator=(DeviceMatrix&& other) noexcept;
    DeviceMatrix(const DeviceMatrix&) = delete;
    DeviceMatrix& operator=(const DeviceMatrix&) = delete;

    id<MTLBuffer> buffer() const { return buffer_; }
    bool zero_copy() const { return pooled_ == false && buffer_ != nil; }
    // Copies the rows x cols elements back into the caller's array (no-op when zero-copy).
    void copy_back(float* dst) const;
    // Sets the rows x cols elements to zero, in the caller's array when zero-copy.
    void zero_elements();

private:
    void give_back();

    BufferPool* pool_ = nullptr;
    id<MTLBuffer> buffer_ = nil;
    bool pooled_ = false;
    int64_t rows_ = 0, cols_ = 0, ld_ = 0;
};

}  // namespace fastgemm::metal_host
