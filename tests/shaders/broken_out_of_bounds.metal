// Deliberately broken: the guard uses <= instead of <, so the last thread writes one float
// past the end of the output buffer.
#include <metal_stdlib>
using namespace metal;

kernel void copy_off_by_one(device const float* x [[buffer(0)]],
                            device float* y [[buffer(1)]],
                            constant uint& n [[buffer(2)]],
                            uint gid [[thread_position_in_grid]]) {
    if (gid <= n) y[gid] = x[gid < n ? gid : 0];
}
