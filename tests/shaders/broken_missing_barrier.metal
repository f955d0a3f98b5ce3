// Deliberately broken: the tile is read without a barrier after it is written, so threads
// see the NaN-poisoned threadgroup memory (or stale values) of slots others have not written.
#include <metal_stdlib>
using namespace metal;

kernel void reverse_in_group(device const float* x [[buffer(0)]],
                             device float* y [[buffer(1)]],
                             uint tid [[thread_index_in_threadgroup]],
                             uint gid [[thread_position_in_grid]],
                             uint n [[threads_per_threadgroup]]) {
    threadgroup float tile[256];
    tile[tid] = x[gid];
    // missing: threadgroup_barrier(mem_flags::mem_threadgroup);
    y[gid] = tile[n - 1 - tid];
}

kernel void reverse_in_group_fixed(device const float* x [[buffer(0)]],
                                   device float* y [[buffer(1)]],
                                   uint tid [[thread_index_in_threadgroup]],
                                   uint gid [[thread_position_in_grid]],
                                   uint n [[threads_per_threadgroup]]) {
    threadgroup float tile[256];
    tile[tid] = x[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[gid] = tile[n - 1 - tid];
}
