// Hopper (sm_90) building blocks used by the wgmma rungs: mbarriers, TMA tile loads,
// wgmma fences and shared-memory matrix descriptors, register reallocation. Thin
// wrappers over PTX; see the PTX ISA sections on mbarrier, cp.async.bulk.tensor and
// wgmma for the semantics each one relies on.
#pragma once

#include <cstdint>

#include <cuda.h>

#include "cuda/common/device_common.cuh"

namespace fastgemm {
namespace cuda {

// Shared memory for TMA tiles with the 128-byte swizzle must start on a 1024-byte
// boundary. The offset is added to the shared array itself (not to an integer copy of
// its address) so the compiler still knows the result points into shared memory and
// emits LDS/STS: a pointer laundered through uintptr_t becomes generic, and every
// access then pays for the generic-to-shared address check (LD.E instead of LDS).
__device__ __forceinline__ uint8_t* align_smem_1024(uint8_t* smem_raw) {
    return smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Invalidates a barrier so that its memory can be initialised again (no arrivals or
// transactions may be pending on it).
__device__ __forceinline__ void mbar_inval(uint64_t* bar) {
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// Makes initialised barriers visible to the async proxy (the TMA unit) as well.
__device__ __forceinline__ void mbar_fence_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// Blocks until the phase of `bar` with this parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(smem_addr(bar)), "r"(parity)
            : "memory");
    } while (!done);
}

// One look, without blocking: true once the phase of `bar` with this parity has
// completed (then, as after mbar_wait, this thread sees what the phase guarded).
__device__ __forceinline__ bool mbar_test(uint64_t* bar, uint32_t parity) {
    uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
    return done != 0;
}

// One 2D box of a tensor map into shared memory; completion counted on `bar` in bytes.
// Coordinates are (inner, outer) in elements and may run past the tensor: the unit
// fills those elements with zeros (and still counts their bytes).
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c_inner, int c_outer,
                                            uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
            smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(c_inner), "r"(c_outer), "r"(smem_addr(bar))
        : "memory");
}

// --- Thread-block clusters -------------------------------------------------------------
// Arrival on the barrier at the same shared-memory offset in CTA `rank` of this cluster
// (mapa translates the local address into the peer's window).
__device__ __forceinline__ void mbar_arrive_in(uint64_t* bar, uint32_t rank) {
    asm volatile(
        "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)),
        "r"(rank)
        : "memory");
}
// Every thread of every CTA of the cluster: what each wrote before is seen by all after.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// One 3D box into the same shared-memory offset of every CTA in `cta_mask`, each CTA's
// barrier at `bar`'s offset counting the bytes it receives.
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const CUtensorMap* map, int c0, int c1, int c2,
                                                      uint64_t* bar, uint16_t cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar)), "h"(cta_mask)
        : "memory");
}
// One 3D box of a tensor map into this CTA's shared memory.
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
        "[%5];\n" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar))
        : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pins a register at this point of the program: the compiler may neither read an
// accumulator before the wgmma that writes it has been waited for, nor recycle a
// fragment register while a wgmma may still read it.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence_operand(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// Shared-memory matrix descriptor for a K-major operand stored as 128-byte rows with
// the 128-byte swizzle (what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B): start address
// >> 4 in bits 0-13, leading-dimension offset (unused for this layout, 1) in 16-29,
// stride between 8-row groups (1024 bytes) >> 4 in 32-45, swizzle mode 1 (128B) in 62-63.
// Tiles start on 1024-byte boundaries, so the base-offset field stays 0; stepping
// along K inside the 128-byte row is done by adding bytes to the start address.
__device__ __forceinline__ uint64_t desc_kmajor_sw128(uint32_t smem_byte_addr) {
    uint64_t d = 0;
    d |= uint64_t((smem_byte_addr & 0x3FFFF) >> 4);
    d |= uint64_t(1) << 16;
    d |= uint64_t(1024 >> 4) << 32;
    d |= uint64_t(1) << 62;
    return d;
}

}  // namespace cuda
}  // namespace fastgemm
