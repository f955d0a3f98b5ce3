// Step 4, seed 003: register blocking 2x2. A 16x16 threadgroup owns a 32x32 tile of C; thread
// (tx, ty) owns rows 2ty, 2ty+1 and columns 2tx, 2tx+1 of it. Per phase the 256 threads stage a
// 32x32 tile of op(A) and of op(B) (four elements each, zero-filled past the edges); in the
// inner loop two A values and two B values feed four multiply-adds held in registers.
// Constraints: none (any shape).
#include <metal_stdlib>
#include "gemm_common.h"
using namespace metal;

constant uint RB_TILE = 32;

kernel void matmul_tiled16_rb2(device const float* A [[buffer(0)]],
                               device const float* B [[buffer(1)]],
                               device float* C [[buffer(2)]],
                               constant GemmParams& p [[buffer(3)]],
                               uint2 tid [[thread_position_in_threadgroup]],
                               uint2 tg [[threadgroup_position_in_grid]]) {
    threadgroup float As[RB_TILE][RB_TILE];
    threadgroup float Bs[RB_TILE][RB_TILE];
    const uint row0 = tg.y * RB_TILE, col0 = tg.x * RB_TILE;
    const uint tx = tid.x, ty = tid.y;
    float acc[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};

    for (uint kk = 0; kk < p.K; kk += RB_TILE) {
        for (uint r = ty; r < RB_TILE; r += 16) {
            for (uint c = tx; c < RB_TILE; c += 16) {
                As[r][c] = gemm_a_or0(A, p, row0 + r, kk + c);
                Bs[r][c] = gemm_b_or0(B, p, kk + r, col0 + c);
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < RB_TILE; ++k) {
            const float a0 = As[ty * 2 + 0][k], a1 = As[ty * 2 + 1][k];
            const float b0 = Bs[k][tx * 2 + 0], b1 = Bs[k][tx * 2 + 1];
            acc[0][0] += a0 * b0;
            acc[0][1] += a0 * b1;
            acc[1][0] += a1 * b0;
            acc[1][1] += a1 * b1;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j)
            gemm_store_checked(C, p, row0 + ty * 2 + i, col0 + tx * 2 + j, acc[i][j]);
}
