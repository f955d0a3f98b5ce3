// The operand pass of rung 15 (fp32_ozaki): steps 1 and 2 of the scheme
// (src/ozaki/ozaki_scheme.hpp) on the device, before the residue GEMM.
//
// A "line" is a row of op(A) or a column of op(B); both operands become the same thing, a
// lines x K matrix read in place through a line stride and a k stride, whatever the
// transposes. Two kernels per operand:
//  - line sums: each line's sum of squares in the scheme's canonical order (32 strided FP64
//    partials, a pairwise tree), then its factor f and 1 / f (line_scale);
//  - residues: the scaled integers rint(f a), their residues for the seven moduli as int8
//    planes (plane l: lines x kp bytes, K-major, k >= K zero), and the line's error-bound
//    terms (inexact, 1-norm: what line_bound needs).
// Each kernel comes in two layouts, for lines contiguous along k (a warp per line, lanes
// along k) and for lines side by side (lanes across 32 neighbouring lines, so that every
// warp-wide load is one 128-byte row), so that global reads are coalesced whatever the
// transposes; the residue kernels split K over blocks as well, and add their shares of a
// line's bound terms with atomics (integer sums: the same in any order). The integer
// arithmetic avoids the conversion unit (16 instructions a clock per SM on sm_90). This
// pass reads each operand twice and writes 7 bytes per element: memory-bound, O(size)
// beside the GEMM's O(size^1.5). Other forms do both steps in one kernel and read the
// operand from memory once (OperandPass, below).
#pragma once

#include <cstdint>

#include <cuda.h>
#include <cuda_runtime.h>

#include "cuda/common/device_operands.hpp"
#include "cuda/common/workspace.hpp"

namespace fastgemm {
namespace cuda {

// What the epilogue needs of a line: 1 / f (NaN for a line holding NaN or Inf), and the
// terms of its error bound, the 1-norm of its scaled integers and whether any was rounded
// (ozaki::line_bound turns them into e and n); factor f is the pass's own. The residue
// kernels add their blocks' shares of norm1 and inexact with atomics.
struct OzakiLine {
    double factor, inverse;
    uint64_t norm1;
    uint32_t inexact, unused;
};

struct OzakiOperands {
    int64_t kp = 0;                 // K rounded up to 32: the row length of a plane, in bytes
    const int8_t* a_planes = nullptr;  // kModuli planes of M x kp
    const int8_t* b_planes = nullptr;  // kModuli planes of N x kp (columns of op(B) as rows)
    const OzakiLine* rows = nullptr;   // M lines of op(A)
    const OzakiLine* cols = nullptr;   // N lines of op(B)
};

// The forms of the pass; all give the same bits.
//  - two_kernels: line sums, then residues, for every layout (the rung's form).
//  - fused_rows: lines contiguous along k, from 2048 of them on, in one kernel that reads
//    each line from memory once and the second time from cache; other lines as above.
//  - resident: one kernel per operand in clusters of up to eight blocks, each block holding
//    its share of k for 32 lines in shared memory: the operand is read from memory once,
//    the line sums are carried from block to block in the order of k (so that they round
//    as the canonical order does), and every block splits its share from shared memory.
//    For K up to 8192; longer K takes the two kernels.
enum class OperandPass { two_kernels, fused_rows, resident };

// Workspace slots 0 (A's planes), 1 (B's planes) and 2 (line records). Queued on `stream`.
OzakiOperands prepare_ozaki_operands(const DeviceOperands& p, cudaStream_t stream, Workspace& ws,
                                     OperandPass pass = OperandPass::two_kernels);

// A TMA map over the kModuli planes of `lines` x kp int8 (a 3D tensor: k, line, plane), boxes
// of 128 k x box_lines lines x 1 plane with the 128-byte swizzle; zeros outside.
CUtensorMap make_residue_map(const int8_t* planes, int64_t lines, int64_t kp, uint32_t box_lines);

}  // namespace cuda
}  // namespace fastgemm
