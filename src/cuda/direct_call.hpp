// The single-call path for host arrays (Kernel::run_direct of every cuda kernel, what
// fastgemm.sgemm on numpy arrays runs): copy A, B (and C when beta != 0) to the GPU,
// run the kernel, copy C back, at no more cost than a framework's copy + matmul + copy.
//
// - Nothing is allocated per call: pinned host staging slots, device copies of the
//   operands and the kernel's workspace are kept per device and grown on demand.
// - Host memory moves through a ring of pinned slots: the host thread copies a piece of
//   an operand into a slot (with the core's thread pool when it is large) while the copy
//   engine moves the previous slot to the device, and the same ring brings C back.
// - Problems large enough to be bound by the transfers are cut into row blocks of C
//   (and of op(A)): block i's GEMM runs on a compute stream while block i + 1's operands
//   travel up on an upload stream and block i - 1's C travels down on a download stream
//   (PCIe carries both directions at once). Each block is the same kernel on a
//   sub-problem it accepts; with one block the call is upload, GEMM, download.
// - The only host waits are for staging slots to be free and for C's pieces to land.
// Launch (the timing path) is separate and unchanged: cuda_backend.cpp's CudaLaunch.
#pragma once

#include "core/problem.hpp"
#include "cuda/ladder.hpp"

namespace fastgemm {
namespace cuda {

// C = alpha op(A) op(B) + beta C for host arrays as `p` describes them, with the
// kernel of `entry`, on the current device. Blocks until C holds the result. Host
// threads take turns (one pipeline per device).
void run_host_call(const LadderEntry& entry, const Problem& p, const float* A, const float* B, float* C);

}  // namespace cuda
}  // namespace fastgemm
