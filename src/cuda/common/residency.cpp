// See residency.hpp.
#include "cuda/common/residency.hpp"

#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "cuda/common/cuda_check.hpp"

namespace fastgemm {
namespace cuda {

namespace {

// A launch shape's occupancy on the current device, from `query` on its first request:
// blocks (cluster_blocks == 0) or clusters of cluster_blocks blocks.
int64_t occupancy_once(const void* kernel, int threads, int smem_bytes, int cluster_blocks,
                       int64_t (*query)(const void* kernel, int dev, int threads, int smem_bytes, int cluster_blocks)) {
    static std::mutex mu;
    static auto* known = new std::map<std::tuple<const void*, int, int, int, int>, int64_t>();  // kept until exit
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    const auto key = std::make_tuple(kernel, dev, threads, smem_bytes, cluster_blocks);
    std::lock_guard<std::mutex> lock(mu);
    auto it = known->find(key);
    if (it != known->end()) return it->second;
    allow_dynamic_smem(kernel, smem_bytes);
    const int64_t count = query(kernel, dev, threads, smem_bytes, cluster_blocks);
    known->emplace(key, count);
    return count;
}

}  // namespace

int64_t resident_blocks(const void* kernel, int threads, int smem_bytes) {
    return occupancy_once(kernel, threads, smem_bytes, 0, [](const void* k, int dev, int t, int smem, int) {
        int sms = 0, per_sm = 0;
        FASTGEMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        FASTGEMM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, t, size_t(smem)));
        return int64_t(sms) * (per_sm > 0 ? per_sm : 1);
    });
}

int64_t resident_clusters(const void* kernel, int threads, int smem_bytes, int cluster_blocks) {
    return occupancy_once(kernel, threads, smem_bytes, cluster_blocks, [](const void* k, int, int t, int smem, int c) {
        cudaLaunchAttribute cluster;
        cluster.id = cudaLaunchAttributeClusterDimension;
        cluster.val.clusterDim.x = unsigned(c), cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(unsigned(c));  // one cluster: what the query asks of the grid
        config.blockDim = dim3(unsigned(t));
        config.dynamicSmemBytes = size_t(smem);
        config.attrs = &cluster;
        config.numAttrs = 1;
        int clusters = 0;
        FASTGEMM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, k, &config));
        return int64_t(clusters);
    });
}

void allow_dynamic_smem(const void* kernel, int smem_bytes) {
    static std::mutex mu;
    static auto* allowed = new std::map<std::pair<const void*, int>, int>();  // kept until exit
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    std::lock_guard<std::mutex> lock(mu);
    int& most = (*allowed)[std::make_pair(kernel, dev)];  // 0 for a kernel not seen on this device
    if (smem_bytes <= most) return;
    FASTGEMM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    most = smem_bytes;
}

}  // namespace cuda
}  // namespace fastgemm
