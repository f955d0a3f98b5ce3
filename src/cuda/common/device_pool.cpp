// See device_pool.hpp. Free buffers are kept per device, and a request takes the
// smallest free buffer that fits; at most kMaxFree buffers are kept per device so a
// sweep over many shapes does not hold on to all of them.
#include "cuda/common/device_pool.hpp"

#include <map>
#include <mutex>

#include "cuda/common/cuda_check.hpp"

namespace fastgemm {
namespace cuda {

namespace {
constexpr size_t kMaxFree = 16;
std::mutex pool_mutex;
std::multimap<std::pair<int, size_t>, void*>& free_buffers() {
    static auto* m = new std::multimap<std::pair<int, size_t>, void*>();  // never destroyed: no exit-order issues
    return *m;
}
}  // namespace

DeviceBuffer acquire_device_buffer(size_t bytes) {
    if (bytes == 0) bytes = 256;
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    DeviceBuffer b;
    b.device_ = dev;
    {
        std::lock_guard<std::mutex> lock(pool_mutex);
        auto& fb = free_buffers();
        auto it = fb.lower_bound({dev, bytes});
        // Reuse only buffers less than twice the request, so small calls do not pin huge ones.
        if (it != fb.end() && it->first.first == dev && it->first.second < 2 * bytes + (1 << 20)) {
            b.ptr_ = it->second;
            b.bytes_ = it->first.second;
            fb.erase(it);
            return b;
        }
    }
    FASTGEMM_CUDA_CHECK(cudaMalloc(&b.ptr_, bytes));
    b.bytes_ = bytes;
    return b;
}

DeviceBuffer::~DeviceBuffer() {
    if (!ptr_) return;
    std::lock_guard<std::mutex> lock(pool_mutex);
    auto& fb = free_buffers();
    fb.insert({{device_, bytes_}, ptr_});
    while (fb.size() > kMaxFree) {  // drop the largest
        auto last = std::prev(fb.end());
        cudaFree(last->second);
        fb.erase(last);
    }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_), device_(o.device_) {
    o.ptr_ = nullptr;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        DeviceBuffer tmp(std::move(*this));
        ptr_ = o.ptr_, bytes_ = o.bytes_, device_ = o.device_;
        o.ptr_ = nullptr;
    }
    return *this;
}

void trim_device_pool() {
    std::lock_guard<std::mutex> lock(pool_mutex);
    for (auto& kv : free_buffers()) cudaFree(kv.second);
    free_buffers().clear();
}

}  // namespace cuda
}  // namespace fastgemm
