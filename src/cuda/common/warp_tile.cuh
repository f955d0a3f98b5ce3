// The warp-tiled FFMA micro-kernel shared by rungs 8 (warptiling) and 9 (multi-stage
// async copies). A block tile BM x BN is split into WARPS_M x WARPS_N warp tiles of
// WM x WN; inside a warp, lanes form an 8 (m) x 4 (n) grid and each lane owns RM x RN
// groups of 4x4 outputs, the groups WM/RM... apart: lane (lm, ln) owns rows
// wm0 + 32*r + 4*lm + [0,4) and columns wn0 + 16*s + 4*ln + [0,4).
// With that spacing, the 8 distinct float4s of A a warp reads per k are one contiguous
// 128-byte row segment (one wavefront, broadcast to the 4 lanes sharing it) and the 4
// float4s of B are 64 contiguous bytes: no bank conflicts, and per k each lane does
// (4RM)(4RN) FMAs for RM + RN 16-byte shared loads.
// Shared layout: As[k][m] (A transposed, rows padded by 4 floats), Bs[k][n].
#pragma once

#include "cuda/common/device_common.cuh"

namespace fastgemm {
namespace cuda {

// Tile names the block tile (BM x BN x BK) and the warps along m and n (WARPS_M,
// WARPS_N) as static members; the shape adds what follows from them.
template <class Tile>
struct WarpTileShape : Tile {
    using Tile::BM, Tile::BN, Tile::BK, Tile::WARPS_M, Tile::WARPS_N;
    static constexpr int kThreads = WARPS_M * WARPS_N * 32;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int RM = WM / 32, RN = WN / 16;
    static constexpr int TM = 4 * RM, TN = 4 * RN;  // outputs per lane: TM x TN
    static constexpr int AS_LD = BM + 4, BS_LD = BN;
    static constexpr int kStageFloats = BK * AS_LD + BK * BS_LD;
    static_assert(WM % 32 == 0 && WN % 16 == 0, "warp tile must be a multiple of 32x16");
};

template <class S>
struct WarpTilePosition {
    int wm0, wn0, lm, ln;
    __device__ WarpTilePosition() {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        wm0 = (warp % S::WARPS_M) * S::WM;
        wn0 = (warp / S::WARPS_M) * S::WN;
        lm = lane >> 2;
        ln = lane & 3;
    }
};

// acc += As[0:BK] x Bs[0:BK] for this lane's outputs.
template <class S>
__device__ __forceinline__ void warp_tile_step(const float* As, const float* Bs,
                                               const WarpTilePosition<S>& w,
                                               float (&acc)[S::TM][S::TN]) {
#pragma unroll
    for (int k = 0; k < S::BK; ++k) {
        float a[S::TM], b[S::TN];
#pragma unroll
        for (int r = 0; r < S::RM; ++r)
            *reinterpret_cast<float4*>(&a[4 * r]) =
                *reinterpret_cast<const float4*>(As + k * S::AS_LD + w.wm0 + 32 * r + 4 * w.lm);
#pragma unroll
        for (int s = 0; s < S::RN; ++s)
            *reinterpret_cast<float4*>(&b[4 * s]) =
                *reinterpret_cast<const float4*>(Bs + k * S::BS_LD + w.wn0 + 16 * s + 4 * w.ln);
#pragma unroll
        for (int i = 0; i < S::TM; ++i)
#pragma unroll
            for (int j = 0; j < S::TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

template <class S>
__device__ __forceinline__ void warp_tile_store(const DeviceOperands& p, int64_t m0, int64_t n0,
                                                const WarpTilePosition<S>& w,
                                                const float (&acc)[S::TM][S::TN]) {
#pragma unroll
    for (int i = 0; i < S::TM; ++i) {
        const int64_t m = m0 + w.wm0 + 32 * (i / 4) + 4 * w.lm + (i % 4);
#pragma unroll
        for (int s = 0; s < S::RN; ++s) {
            const int64_t n = n0 + w.wn0 + 16 * s + 4 * w.ln;
            store_c4(p, m, n,
                     make_float4(acc[i][4 * s], acc[i][4 * s + 1], acc[i][4 * s + 2], acc[i][4 * s + 3]));
        }
    }
}

}  // namespace cuda
}  // namespace fastgemm
