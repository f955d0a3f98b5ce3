// See residency.hpp.
#include "cuda/common/residency.hpp"

#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "cuda/common/cuda_check.hpp"

namespace fastgemm {
namespace cuda {

int64_t resident_blocks(const void* kernel, int threads, int smem_bytes) {
    static std::mutex mu;
    static auto* known = new std::map<std::tuple<const void*, int, int, int>, int64_t>();  // kept until exit
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    const auto key = std::make_tuple(kernel, dev, threads, smem_bytes);
    std::lock_guard<std::mutex> lock(mu);
    auto it = known->find(key);
    if (it != known->end()) return it->second;
    allow_dynamic_smem(kernel, smem_bytes);
    int sms = 0, per_sm = 0;
    FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    FASTGEMM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, size_t(smem_bytes)));
    const int64_t blocks = int64_t(sms) * (per_sm > 0 ? per_sm : 1);
    known->emplace(key, blocks);
    return blocks;
}

void allow_dynamic_smem(const void* kernel, int smem_bytes) {
    static std::mutex mu;
    static auto* allowed = new std::set<std::tuple<const void*, int, int>>();  // kept until exit
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    const auto key = std::make_tuple(kernel, dev, smem_bytes);
    std::lock_guard<std::mutex> lock(mu);
    if (allowed->count(key)) return;
    FASTGEMM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    allowed->insert(key);
}

}  // namespace cuda
}  // namespace fastgemm
