// See ozaki_operands.cuh.
#include "cuda/common/ozaki_operands.cuh"

#include <mutex>
#include <string>

#include <cooperative_groups.h>

#include "cuda/common/cuda_check.hpp"
#include "cuda/common/device_common.cuh"
#include "cuda/common/ozaki_residue.cuh"
#include "cuda/common/residency.hpp"
#include "ozaki/ozaki_scheme.hpp"

namespace fastgemm {
namespace cuda {

namespace {

namespace oz = fastgemm::ozaki;

constexpr int kLanes = oz::kSumLanes;  // 32: the canonical partials of a line's sum of squares
constexpr int kUnroll = 8;             // loads a thread keeps in flight while it sums squares
constexpr int kRowBlock = 256;         // threads of the row kernels: 8 lines, a warp each
constexpr int kRowLines = kRowBlock / 32;
constexpr int kRowChunk = 2048;        // k per block of the residue kernel for lines along k
constexpr int64_t kWholeRowLines = 2048;  // lines along k from which one warp takes a whole line
constexpr int kColWarps = 8;           // warps of the residue kernel for lines side by side
constexpr int kColChunk = 128;         // k per block of that kernel: 128 bytes per line and plane
// The resident form (OperandPass::resident): a cluster of up to kResidentMaxBlocks blocks per
// 32 lines, each block a chunk of k (a power-of-two multiple of 128, at most
// kResidentMaxChunk: 32 lines of it are 132 KB of shared memory).
constexpr int kResidentThreads = 256;
constexpr int kResidentWarps = kResidentThreads / 32;
constexpr int kResidentMaxBlocks = 8;  // the portable cluster size
constexpr int64_t kResidentMaxChunk = 1024;
constexpr int kResidentPad = 4;  // floats after each line's chunk: rows stay 16-byte aligned

// Element k of a line: src[line * ls + k * ks]. Row kernels take lines contiguous along k
// (ks == 1); column kernels lines side by side (ls == 1), k strided.
struct LineView {
    const float* src;
    int64_t lines, K, ls, ks;
};

// Partial p of a line's sum of squares: its elements src[k step] at k = p, p + 32, ... below
// K, squared exactly and added in increasing k, kUnroll loads in flight.
__device__ __forceinline__ double partial_sum_of_squares(const float* src, int64_t step, int p, int64_t K) {
    double partial = 0.0;
    int64_t k = p;
    for (; k + kLanes * (kUnroll - 1) < K; k += kLanes * kUnroll) {
        float a[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) a[u] = src[(k + kLanes * u) * step];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) partial += double(a[u]) * double(a[u]);  // exact square
    }
    for (; k < K; k += kLanes) {
        const double a = src[k * step];
        partial += a * a;
    }
    return partial;
}

// The scheme's tree over a line's 32 partials, lane p holding partial p: lane 0 gets the
// sum of squares. Every form of the pass combines with this one, so that all round alike.
__device__ __forceinline__ double combine_partials(double partial) {
    for (int d = kLanes / 2; d >= 1; d /= 2) partial += __shfl_down_sync(0xffffffffu, partial, d);
    return partial;
}

// A line's record from its sum of squares: its scale, and a 1-norm and inexact flag that
// the residue kernels then add to.
__device__ __forceinline__ void start_line(OzakiLine& line, double sum_of_squares, double R) {
    const oz::LineScale s = oz::line_scale(sum_of_squares, R);
    line.factor = s.factor;
    line.inverse = s.inverse;
    line.norm1 = 0;
    line.inexact = 0;
}

// Lines contiguous along k: a warp per line, lane p keeping partial p; then the scheme's
// tree over the 32 lanes.
__global__ void __launch_bounds__(kRowBlock) line_sums_rows_kernel(LineView v, double R, OzakiLine* out) {
    const int lane = threadIdx.x % 32;
    const int64_t line = int64_t(blockIdx.x) * kRowLines + threadIdx.x / 32;
    if (line >= v.lines) return;  // the whole warp
    const double sum = combine_partials(partial_sum_of_squares(v.src + line * v.ls, 1, lane, v.K));
    if (lane == 0) start_line(out[line], sum, R);
}

// Lines side by side: a block owns 32 lines, thread (p, x) keeps partial p of line x, so
// that each warp reads one row of 32 neighbouring lines (128 bytes) per k. The partials
// meet in shared memory, where warp x combines line x's with the same tree.
__global__ void __launch_bounds__(kLanes* kLanes) line_sums_cols_kernel(LineView v, double R, OzakiLine* out) {
    __shared__ double partials[kLanes][kLanes + 1];
    const int x = threadIdx.x % 32, p = threadIdx.x / 32;
    const int64_t l0 = int64_t(blockIdx.x) * kLanes, line = l0 + x;
    partials[p][x] = line < v.lines ? partial_sum_of_squares(v.src + line, v.ks, p, v.K) : 0.0;
    __syncthreads();
    const int w = p;  // warp w now combines line l0 + w, lane x holding its partial x
    const double s = combine_partials(partials[x][w]);
    if (x == 0 && l0 + w < v.lines) start_line(out[l0 + w], s, R);
}

// rint(f a) as an int32, and whether f a was not an integer: oz::scaled_integer's results,
// from FP64 adds instead of the conversion unit (F2I and FRND issue 16 a clock per SM on
// sm_90, FP64 arithmetic 64). f a is exact and below 2^28 in magnitude; adding 1.5 x 2^52
// rounds it to an integer (to nearest even, as rint) and leaves that integer, two's
// complement, in the low word of the sum.
__device__ __forceinline__ int32_t scaled_integer(float a, double f, bool& inexact) {
    constexpr double kMagic52 = 6755399441055744.0;  // 1.5 x 2^52
    const double x = double(a) * f;
    const double t = x + kMagic52;
    inexact = inexact || t - kMagic52 != x;
    return int32_t(uint32_t(__double_as_longlong(t)));
}

// The seven residues of a scaled integer v (|v| < 2^28) as the bits of ozaki_residue.cuh
// (low byte: the residue), the canonical ones of oz::symmetric_residue: v = hi 2^14 + lo with
// |hi| <= 2^14 and 0 <= lo < 2^14, converted once, then per odd modulus y = hi (2^14 mod m)
// + lo, below 2^21 + 2^14 and exact from one FMA, and y + 1.5 x 2^23 from another.
__device__ __forceinline__ void split_integer(int32_t v, uint32_t (&bits)[oz::kModuli]) {
    const float hi = small_int_to_float(v >> 14), lo = small_int_to_float(v & 0x3FFF);
    const float lo_biased = __int_as_float((v & 0x3FFF) | kSmallIntMagicBits);
#pragma unroll
    for (int l = 0; l < oz::kModuli; ++l) {
        const int32_t m = oz::modulus(l);
        const float c = float(symmetric_pow2_mod(14, m));
        bits[l] = m == 256 ? uint32_t(v) : uint32_t(odd_residue_bits(fmaf(hi, c, lo), fmaf(hi, c, lo_biased), odd_modulus(m)));
    }
}

// One element: its scaled integer's residue bits; the line's 1-norm and inexactness
// accumulate. A line with NaN or Inf (NaN factor) keeps zero residues.
__device__ __forceinline__ void split_element(float a, double f, bool scalable, uint32_t (&bits)[oz::kModuli],
                                              uint64_t& norm1, bool& inexact) {
    const int32_t value = scalable ? scaled_integer(a, f, inexact) : 0;
    norm1 += uint64_t(value < 0 ? -int64_t(value) : int64_t(value));
    split_integer(value, bits);
}

// The residues of four neighbouring k as one word per plane.
__device__ __forceinline__ void split_quad(const float (&a)[4], double f, bool scalable, uint32_t (&word)[oz::kModuli],
                                           uint64_t& norm1, bool& inexact) {
    uint32_t bits[4][oz::kModuli];
#pragma unroll
    for (int e = 0; e < 4; ++e) split_element(a[e], f, scalable, bits[e], norm1, inexact);
#pragma unroll
    for (int l = 0; l < oz::kModuli; ++l) word[l] = pack_low_bytes(bits[0][l], bits[1][l], bits[2][l], bits[3][l]);
}

// A warp's 1-norms and inexact flags of one line, summed and or-ed into every lane's (lane 0
// reads them; integer sums, the same in any order).
__device__ __forceinline__ void combine_line_terms(uint64_t& norm1, bool& inexact) {
    for (int d = 16; d >= 1; d /= 2) norm1 += __shfl_down_sync(0xffffffffu, norm1, d);
    inexact = __any_sync(0xffffffffu, inexact);
}

// A block's share of a line's 1-norm and inexactness, added to the line's record (integer
// sums and an or: the same in any order).
__device__ __forceinline__ void add_line_terms(OzakiLine& line, uint64_t norm1, bool inexact) {
    if (norm1 != 0) atomicAdd(reinterpret_cast<unsigned long long*>(&line.norm1), (unsigned long long)norm1);
    if (inexact) atomicOr(&line.inexact, 1u);
}

// One lane's share of a line contiguous along k, from k_begin (a multiple of 4 x 32) below
// k_end: lane L splits four neighbouring k per step (one 16-byte load where the line allows
// it), so that every plane gets 128 contiguous bytes per warp and step. Two steps per
// iteration keep two loads in flight before the first stores.
__device__ __forceinline__ void split_row_range(const LineView& v, int64_t line, int64_t kp, int64_t k_begin,
                                                int64_t k_end, int lane, bool vec4, double f, int8_t* planes,
                                                uint64_t& norm1, bool& inexact) {
    const float* src = v.src + line * v.ls;
    const bool scalable = !isnan(f);
    for (int64_t k0 = k_begin + 4 * lane; k0 < k_end; k0 += 2 * 4 * 32) {
        float a[2][4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int64_t k = k0 + h * 4 * 32;
            if (vec4 && k + 3 < v.K) {
                const float4 q = *reinterpret_cast<const float4*>(src + k);
                a[h][0] = q.x, a[h][1] = q.y, a[h][2] = q.z, a[h][3] = q.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) a[h][e] = k + e < v.K ? src[k + e] : 0.0f;
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int64_t k = k0 + h * 4 * 32;
            if (k >= k_end) break;
            uint32_t word[oz::kModuli];
            split_quad(a[h], f, scalable, word, norm1, inexact);
#pragma unroll
            for (int l = 0; l < oz::kModuli; ++l)
                *reinterpret_cast<uint32_t*>(planes + (int64_t(l) * v.lines + line) * kp + k) = word[l];
        }
    }
}

// Lines contiguous along k: a warp per line and kRowChunk values of k per block (grid.y);
// the blocks of a line add their shares of its bound terms.
__global__ void __launch_bounds__(kRowBlock)
    residues_rows_kernel(LineView v, int64_t kp, bool vec4, int8_t* planes, OzakiLine* lines) {
    const int lane = threadIdx.x % 32;
    const int64_t line = int64_t(blockIdx.x) * kRowLines + threadIdx.x / 32;
    if (line >= v.lines) return;
    const int64_t k_begin = int64_t(blockIdx.y) * kRowChunk, k_end = min(kp, k_begin + kRowChunk);
    bool inexact = false;
    uint64_t norm1 = 0;
    split_row_range(v, line, kp, k_begin, k_end, lane, vec4, lines[line].factor, planes, norm1, inexact);
    combine_line_terms(norm1, inexact);
    if (lane == 0) add_line_terms(lines[line], norm1, inexact);
}

// Lines contiguous along k, both steps in one kernel: a warp sums its line's squares as
// line_sums_rows_kernel does (the same partials and tree, so the same factor), then splits
// the whole line, reading it the second time from L1 or L2 rather than from memory. The
// warp owns the line's record outright: no atomics, and A is fetched from memory once.
// Used from kWholeRowLines lines on, where a warp per whole line still gives every SM
// several blocks; below that the two kernels split K over blocks instead.
__global__ void __launch_bounds__(kRowBlock)
    scale_and_split_rows_kernel(LineView v, double R, int64_t kp, bool vec4, int8_t* planes, OzakiLine* lines) {
    const int lane = threadIdx.x % 32;
    const int64_t line = int64_t(blockIdx.x) * kRowLines + threadIdx.x / 32;
    if (line >= v.lines) return;  // the whole warp
    const double sum = combine_partials(partial_sum_of_squares(v.src + line * v.ls, 1, lane, v.K));
    const oz::LineScale s = oz::line_scale(__shfl_sync(0xffffffffu, sum, 0), R);  // lane 0 holds the sum
    bool inexact = false;
    uint64_t norm1 = 0;
    split_row_range(v, line, kp, 0, kp, lane, vec4, s.factor, planes, norm1, inexact);
    combine_line_terms(norm1, inexact);
    if (lane == 0) {
        OzakiLine& out = lines[line];
        out.factor = s.factor;
        out.inverse = s.inverse;
        out.norm1 = norm1;
        out.inexact = inexact;
    }
}

// Lines side by side: a block owns 32 lines and kColChunk = 128 values of k (grid.y).
// Thread (w, x) reads line l0 + x at k = 32 j + 4 w + e (j, e < 4; each warp-wide load one row
// of 32 neighbouring lines, 128 bytes), packs the four residues of each k-quad into a word
// per plane and leaves it in shared memory; the block then writes every plane's 128 bytes
// per line as whole rows (lane L: word L), so global writes are coalesced too. The warps'
// 1-norms and inexact flags meet in shared memory.
__global__ void __launch_bounds__(kLanes* kColWarps)
    residues_cols_kernel(LineView v, int64_t kp, int8_t* planes, OzakiLine* lines) {
    constexpr int kWords = kColChunk / 4, kPitch = kWords + 1;  // +1: threads of a warp write distinct banks
    __shared__ uint32_t staged[oz::kModuli][kLanes][kPitch];
    __shared__ uint64_t norms[kColWarps][kLanes];
    __shared__ int flags[kColWarps][kLanes];
    const int x = threadIdx.x % 32, w = threadIdx.x / 32;
    const int64_t l0 = int64_t(blockIdx.x) * kLanes, line = l0 + x;
    const int64_t k0 = int64_t(blockIdx.y) * kColChunk;
    const bool in = line < v.lines;
    const double f = in ? lines[line].factor : 0.0;
    const bool scalable = in && !isnan(f);
    bool inexact = false;
    uint64_t norm1 = 0;
    float a[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int64_t k = k0 + 32 * j + 4 * w + e;
            a[j][e] = in && k < v.K ? v.src[k * v.ks + line] : 0.0f;
        }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        uint32_t word[oz::kModuli];
        split_quad(a[j], f, scalable, word, norm1, inexact);
#pragma unroll
        for (int l = 0; l < oz::kModuli; ++l) staged[l][x][8 * j + w] = word[l];
    }
    norms[w][x] = norm1;
    flags[w][x] = inexact;
    __syncthreads();
    // Row r = (plane, line) of the staged words: warp w takes rows w, w + 8, ...
    const int64_t k = k0 + 4 * x;  // lane x now writes word x of a row: k .. k + 3
    for (int r = w; r < oz::kModuli * kLanes; r += kColWarps) {
        const int l = r / kLanes, ln = r % kLanes;
        if (l0 + ln < v.lines && k < kp)
            *reinterpret_cast<uint32_t*>(planes + (int64_t(l) * v.lines + l0 + ln) * kp + k) = staged[l][ln][x];
    }
    if (w == 0 && in) {
        for (int c = 1; c < kColWarps; ++c) norm1 += norms[c][x], inexact = inexact || flags[c][x];
        add_line_terms(lines[line], norm1, inexact);
    }
}

// Lines x (0..31) of a cluster's 32, k0 + kk of a block's chunk: tile[x * pitch + kk], with
// pitch = chunk + kResidentPad.
//
// Why the sums are carried: a line's factor must round exactly as the canonical order does,
// partial p adding k = p, p + 32, ... in increasing k from 0.0 (oz::kSumLanes partials). A
// chunk is a multiple of 32 values of k, so block r continues every partial where block
// r - 1 left it: the blocks take turns (one cluster barrier each), block r adding its
// chunk/32 values per partial to what it reads from block r - 1's shared memory. Values
// of k at or beyond K are zero in the tile and add nothing. The last block then combines
// the 32 partials with the canonical tree and publishes the factors; every block splits
// its chunk from shared memory (the same split_quad as the residue kernels), and block 0
// adds the blocks' 1-norms and inexact flags into each line's record.
__global__ void __launch_bounds__(kResidentThreads)
    scale_and_split_resident_kernel(LineView v, double R, int64_t kp, int64_t chunk, bool along_k, bool vec4,
                                    int8_t* planes, OzakiLine* lines) {
    namespace cg = cooperative_groups;
    extern __shared__ __align__(16) float tile[];
    __shared__ double carry[kLanes][kLanes + 1];  // [p][x]: partial p of line x, as this block leaves it
    __shared__ double scale[2][kLanes];           // factor and 1 / factor of line x (the last block's)
    __shared__ unsigned long long norm_share[kLanes];
    __shared__ unsigned inexact_share[kLanes];
    const cg::cluster_group cluster = cg::this_cluster();
    const int rank = int(cluster.block_rank()), blocks = int(cluster.num_blocks());
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t l0 = int64_t(blockIdx.x / blocks) * kLanes, k0 = rank * chunk;
    const int64_t pitch = chunk + kResidentPad;

    // The chunk into shared memory, zeros outside the operand. Every thread reaches every
    // cluster barrier below: nothing returns early.
    if (along_k) {  // a warp per line, 16 bytes a lane where the line allows it
        for (int x = warp; x < kLanes; x += kResidentWarps) {
            const int64_t line = l0 + x;
            for (int64_t kk = 4 * lane; kk < chunk; kk += 4 * 32) {
                const int64_t k = k0 + kk;
                float* dst = tile + x * pitch + kk;
                if (line < v.lines && vec4 && k + 3 < v.K) {
                    cp_async_16(dst, v.src + line * v.ls + k);
                } else {
                    for (int e = 0; e < 4; ++e) {
                        if (line < v.lines && k + e < v.K) cp_async_4(dst + e, v.src + line * v.ls + k + e);
                        else dst[e] = 0.0f;
                    }
                }
            }
        }
    } else {  // lane x takes line l0 + x: every warp-wide copy is one 128-byte row of the operand
        const int64_t line = l0 + lane;
        for (int64_t kk = warp; kk < chunk; kk += kResidentWarps) {
            const int64_t k = k0 + kk;
            float* dst = tile + lane * pitch + kk;
            if (line < v.lines && k < v.K) cp_async_4(dst, v.src + k * v.ks + line);
            else *dst = 0.0f;
        }
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    // The blocks' turns: thread (warp, lane) carries partials warp + 8 i of line lane.
    constexpr int kPerThread = kLanes / kResidentWarps;
    for (int turn = 0; turn < blocks; ++turn) {
        if (turn == rank) {
            double partial[kPerThread];
            const double* before = rank > 0 ? cluster.map_shared_rank(&carry[0][0], rank - 1) : nullptr;
#pragma unroll
            for (int i = 0; i < kPerThread; ++i)
                partial[i] = before ? before[(warp + kResidentWarps * i) * (kLanes + 1) + lane] : 0.0;
            for (int64_t j = 0; j < chunk; j += kLanes) {
#pragma unroll
                for (int i = 0; i < kPerThread; ++i) {
                    const double a = tile[lane * pitch + j + warp + kResidentWarps * i];
                    partial[i] += a * a;  // exact square; one rounding, as in partial_sum_of_squares
                }
            }
#pragma unroll
            for (int i = 0; i < kPerThread; ++i) carry[warp + kResidentWarps * i][lane] = partial[i];
        }
        cluster.sync();
    }
    if (rank == blocks - 1) {  // the canonical tree over each line's 32 partials, then its scale
        for (int x = warp; x < kLanes; x += kResidentWarps) {
            const double sum = combine_partials(carry[lane][x]);
            if (lane == 0) {
                const oz::LineScale ls = oz::line_scale(sum, R);
                scale[0][x] = ls.factor;
                scale[1][x] = ls.inverse;
            }
        }
    }
    cluster.sync();

    // Every block splits its chunk below kp: a warp per line, 128 contiguous bytes per plane
    // and step, as residues_rows_kernel writes them.
    const double* factors = cluster.map_shared_rank(&scale[0][0], blocks - 1);
    const int64_t k_end = min(chunk, kp - k0);
    for (int x = warp; x < kLanes; x += kResidentWarps) {
        const int64_t line = l0 + x;
        if (line >= v.lines) break;  // the whole warp: x grows with the loop
        const double f = factors[x];
        const bool scalable = !isnan(f);
        uint64_t norm1 = 0;
        bool inexact = false;
        for (int64_t kk = 4 * lane; kk < k_end; kk += 4 * 32) {
            const float4 q = *reinterpret_cast<const float4*>(tile + x * pitch + kk);
            const float a[4] = {q.x, q.y, q.z, q.w};
            uint32_t word[oz::kModuli];
            split_quad(a, f, scalable, word, norm1, inexact);
#pragma unroll
            for (int l = 0; l < oz::kModuli; ++l)
                *reinterpret_cast<uint32_t*>(planes + (int64_t(l) * v.lines + line) * kp + k0 + kk) = word[l];
        }
        combine_line_terms(norm1, inexact);
        if (lane == 0) norm_share[x] = norm1, inexact_share[x] = inexact;
    }
    cluster.sync();
    if (rank == 0 && warp == 0 && l0 + lane < v.lines) {
        unsigned long long norm1 = 0;
        unsigned inexact = 0;
        for (int r = 0; r < blocks; ++r) {
            norm1 += *cluster.map_shared_rank(&norm_share[lane], r);
            inexact |= *cluster.map_shared_rank(&inexact_share[lane], r);
        }
        OzakiLine& out = lines[l0 + lane];
        out.factor = factors[lane];
        out.inverse = factors[kLanes + lane];
        out.norm1 = norm1;
        out.inexact = inexact;
    }
    cluster.sync();  // no block leaves while block 0 reads its shared memory
}

// The resident form's launch, or false where it does not apply (K beyond 8 chunks of
// kResidentMaxChunk, or no cluster of its size fits).
bool scale_and_split_resident(const LineView& v, bool along_k, bool vec4, double R, int64_t kp, int8_t* planes,
                              OzakiLine* lines, cudaStream_t stream) {
    int64_t chunk = 128;
    while (chunk < kResidentMaxChunk && (kp + chunk - 1) / chunk > kResidentMaxBlocks) chunk *= 2;
    const int blocks = int((kp + chunk - 1) / chunk);
    if (blocks > kResidentMaxBlocks) return false;
    const int smem = int(kLanes * (chunk + kResidentPad) * int64_t(sizeof(float)));
    if (resident_clusters(scale_and_split_resident_kernel, kResidentThreads, smem, blocks) < 1) return false;
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = unsigned(blocks), cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(unsigned((v.lines + kLanes - 1) / kLanes * blocks));
    config.blockDim = dim3(kResidentThreads);
    config.dynamicSmemBytes = size_t(smem);
    config.stream = stream;
    config.attrs = &cluster;
    config.numAttrs = 1;
    FASTGEMM_CUDA_CHECK(cudaLaunchKernelEx(&config, scale_and_split_resident_kernel, v, R, kp, chunk, along_k, vec4,
                                           planes, lines));
    return true;
}

void scale_and_split(const LineView& v, bool k_contiguous, int64_t kp, int8_t* planes, OzakiLine* lines,
                     OperandPass pass, cudaStream_t stream) {
    const double R = oz::norm_bound(v.K);
    const bool vec4 = k_contiguous && v.ls % 4 == 0 && (reinterpret_cast<uintptr_t>(v.src) & 15) == 0;
    if (pass == OperandPass::resident && scale_and_split_resident(v, k_contiguous, vec4, R, kp, planes, lines, stream))
        return;
    if (k_contiguous) {
        const unsigned grid = unsigned((v.lines + kRowLines - 1) / kRowLines);
        if (pass == OperandPass::fused_rows && v.lines >= kWholeRowLines) {
            scale_and_split_rows_kernel<<<grid, kRowBlock, 0, stream>>>(v, R, kp, vec4, planes, lines);
            FASTGEMM_CUDA_CHECK_LAUNCH();
            return;
        }
        line_sums_rows_kernel<<<grid, kRowBlock, 0, stream>>>(v, R, lines);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        const dim3 chunks(grid, unsigned((kp + kRowChunk - 1) / kRowChunk));
        residues_rows_kernel<<<chunks, kRowBlock, 0, stream>>>(v, kp, vec4, planes, lines);
    } else {
        const unsigned grid = unsigned((v.lines + kLanes - 1) / kLanes);
        line_sums_cols_kernel<<<grid, kLanes * kLanes, 0, stream>>>(v, R, lines);
        FASTGEMM_CUDA_CHECK_LAUNCH();
        const dim3 chunks(grid, unsigned((kp + kColChunk - 1) / kColChunk));
        residues_cols_kernel<<<chunks, kLanes * kColWarps, 0, stream>>>(v, kp, planes, lines);
    }
    FASTGEMM_CUDA_CHECK_LAUNCH();
}

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime's entry-point query (no libcuda at link time).
EncodeTiled encode_tiled() {
    static EncodeTiled fn = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<EncodeTiled>(p);
    });
    if (!fn) throw KernelError("cuTensorMapEncodeTiled is not available from the CUDA driver");
    return fn;
}

}  // namespace

OzakiOperands prepare_ozaki_operands(const DeviceOperands& p, cudaStream_t stream, Workspace& ws, OperandPass pass) {
    const Problem& q = p.problem;
    OzakiOperands o;
    o.kp = (q.K + kLanes - 1) / kLanes * kLanes;
    int8_t* a_planes = static_cast<int8_t*>(ws.get(0, size_t(oz::kModuli) * size_t(q.M) * size_t(o.kp)));
    int8_t* b_planes = static_cast<int8_t*>(ws.get(1, size_t(oz::kModuli) * size_t(q.N) * size_t(o.kp)));
    OzakiLine* lines = static_cast<OzakiLine*>(ws.get(2, size_t(q.M + q.N) * sizeof(OzakiLine)));
    // Rows of op(A): A[i * lda + k], or A[k * lda + i] when transposed. Columns of op(B):
    // B[k * ldb + j], or B[j * ldb + k] when transposed.
    const LineView a{p.A, q.M, q.K, q.trans_a ? 1 : q.lda, q.trans_a ? q.lda : 1};
    const LineView b{p.B, q.N, q.K, q.trans_b ? q.ldb : 1, q.trans_b ? 1 : q.ldb};
    scale_and_split(a, !q.trans_a, o.kp, a_planes, lines, pass, stream);
    scale_and_split(b, q.trans_b, o.kp, b_planes, lines + q.M, pass, stream);
    o.a_planes = a_planes, o.b_planes = b_planes, o.rows = lines, o.cols = lines + q.M;
    return o;
}

CUtensorMap make_residue_map(const int8_t* planes, int64_t lines, int64_t kp, uint32_t box_lines) {
    CUtensorMap map;
    const cuuint64_t dims[3] = {cuuint64_t(kp), cuuint64_t(lines), cuuint64_t(oz::kModuli)};
    const cuuint64_t strides[2] = {cuuint64_t(kp), cuuint64_t(lines) * cuuint64_t(kp)};  // bytes
    const cuuint32_t box[3] = {128, box_lines, 1};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<int8_t*>(planes), dims,
                                      strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw KernelError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ") for residue planes of " +
                          std::to_string(lines) + " x " + std::to_string(kp) + " bytes");
    return map;
}

}  // namespace cuda
}  // namespace fastgemm
