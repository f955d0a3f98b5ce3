// Deliberately broken: threads past `count` return before a barrier the others wait at.
// Apple GPUs let returned threads skip later barriers; strict mode reports it.
#include <metal_stdlib>
using namespace metal;

kernel void early_return(device float* y [[buffer(0)]],
                         constant uint& count [[buffer(1)]],
                         uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float tile[64];
    if (tid >= count) return;
    tile[tid] = float(tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[tid] = tile[(tid + 1) % count];
}

kernel void two_barriers(device float* y [[buffer(0)]],
                         uint tid [[thread_index_in_threadgroup]]) {
    if (tid % 2 == 0) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    } else {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    y[tid] = 1.0f;
}
