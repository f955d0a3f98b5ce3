// DevicePool: device buffers reused across sgemm calls and Launch objects. A numpy
// sgemm on the cuda backend uploads into buffers taken from here and returns them when
// its Launch ends, so a loop of calls of one shape allocates once (cudaMalloc and
// cudaFree each synchronise the device and cost far more than a small GEMM).
#pragma once

#include <cstddef>
#include <memory>

namespace fastgemm {
namespace cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    float* data() const { return static_cast<float*>(ptr_); }

private:
    friend DeviceBuffer acquire_device_buffer(size_t bytes);
    void* ptr_ = nullptr;
    size_t bytes_ = 0;
    int device_ = 0;
};

// A buffer of at least `bytes` on the current device (from the pool when one fits).
DeviceBuffer acquire_device_buffer(size_t bytes);
// Frees every pooled buffer not in use (tests; `fastgemm` never needs to call it).
void trim_device_pool();

}  // namespace cuda
}  // namespace fastgemm
