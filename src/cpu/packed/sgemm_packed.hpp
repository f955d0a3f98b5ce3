// The packed SGEMM driver: BLIS-style loops around one micro-kernel.
//
//   for jc in N step nc            (B block kc x nc -> L3)
//     for pc in K step kc          pack op(B)[pc:, jc:] into NR-wide micro-panels
//       for ic in M step mc        pack op(A)[ic:, pc:] into MR-wide micro-panels (L2)
//         for jr in nc step NR       (B micro-panel stays in L1)
//           for ir in mc step MR     micro-kernel: one MR x NR tile of C in registers
//
// Threads (the shared pool, src/core/threads.hpp) split either the rows of C (each
// thread packs its own A blocks; the B block is packed once, cooperatively, and shared)
// or, when there are too few rows to share out evenly, the columns (each thread then
// runs the whole loop nest on its own column range). Either way every C element is
// summed in the same order (k blocks in order, k in order inside a block), so results
// do not depend on the thread count, let alone vary between runs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/problem.hpp"
#include "cpu/packed/blocking.hpp"

namespace fastgemm {

// A problem's block sizes and thread split, decided once per (problem, config).
struct PackedPlan {
    Problem problem;
    const MicroKernel* kernel = nullptr;
    int64_t mc = 0, kc = 0, nc = 0;  // effective: clamped to the problem, balanced
    int threads = 1;                 // tasks actually used
    bool split_columns = false;      // threads own column ranges instead of row ranges
    int64_t a_floats = 0;            // per-thread packed-A buffer
    int64_t b_floats = 0;            // shared packed-B buffer (per thread when split_columns)
};

PackedPlan plan_packed(const Problem& p, const PackedConfig& cfg);

// 64-byte-aligned pack buffers, one A buffer per thread and one or more B buffers.
// Reserve once (e.g. when a Launch is bound); run() then allocates nothing.
class PackedWorkspace {
public:
    void reserve(const PackedPlan& plan);
    float* a(int thread) { return a_[thread].get(); }
    float* b(int thread) { return b_[b_.size() == 1 ? 0 : thread].get(); }

private:
    struct FreeDeleter {
        void operator()(float* p) const;
    };
    using Buffer = std::unique_ptr<float, FreeDeleter>;
    static void grow(std::vector<Buffer>& bufs, std::vector<int64_t>& sizes, size_t count,
                     int64_t floats);
    std::vector<Buffer> a_, b_;
    std::vector<int64_t> a_size_, b_size_;
};

// C = alpha * op(A) op(B) + beta * C following `plan` (made by plan_packed for the same
// problem); `ws` must have been reserved for it.
void sgemm_packed(const PackedPlan& plan, const float* A, const float* B, float* C,
                  PackedWorkspace& ws);

// One-shot convenience: plans and allocates per call.
void sgemm_packed(const Problem& p, const float* A, const float* B, float* C,
                  const PackedConfig& cfg);

}  // namespace fastgemm
