// The direct kernels' portable pieces, for CPUs without an x86 SIMD path here (arm64
// builds, FASTGEMM_CPU_ISA=scalar). The "vector" is four floats in a struct; at -O3 the
// compiler maps its loops to SSE2 or NEON, which is what a portable build really gets.
// 6 x 16 rows tiles, 3 x 3 dot tiles.

#include "cpu/direct/direct_isa.hpp"
#include "cpu/direct/direct_tiles.hpp"

namespace fastgemm {
namespace {

struct Portable4 {
    struct vec {
        float v[4];
    };
    static constexpr int W = 4;
    static vec zero() { return {{0.0f, 0.0f, 0.0f, 0.0f}}; }
    static vec set1(float x) { return {{x, x, x, x}}; }
    static vec loadu(const float* p) { return {{p[0], p[1], p[2], p[3]}}; }
    static void storeu(float* p, vec a) {
        for (int l = 0; l < W; ++l) p[l] = a.v[l];
    }
    static vec broadcast(const float* p) { return set1(*p); }
    static vec fmadd(vec a, vec b, vec c) {
        vec r;
        for (int l = 0; l < W; ++l) r.v[l] = a.v[l] * b.v[l] + c.v[l];  // std::fma is a library call without hardware FMA
        return r;
    }
    static vec mul(vec a, vec b) {
        vec r;
        for (int l = 0; l < W; ++l) r.v[l] = a.v[l] * b.v[l];
        return r;
    }
    static float reduce_add(vec a) { return (a.v[0] + a.v[2]) + (a.v[1] + a.v[3]); }
    static vec load_first(const float* p, int left) {
        vec r = zero();
        for (int l = 0; l < left; ++l) r.v[l] = p[l];
        return r;
    }
    static void store_first(float* p, vec a, int left) {
        for (int l = 0; l < left; ++l) p[l] = a.v[l];
    }
};

using Rows = RowsTile<Portable4, 6, 4>;
using Dot = DotTile<Portable4, 3, 3>;
const DirectIsa kPortable{"portable", CpuIsa::scalar, Rows::MR_, Rows::NR, &Rows::kernel<false>, &Rows::kernel<true>,
                          Dot::MR_, Dot::NR_, &Dot::kernel, &gemv_rows_sum<Portable4>,
                    &gemv_dot_rows<Portable4>};

}  // namespace

const DirectIsa* direct_isa_portable() { return &kPortable; }

const DirectIsa* direct_isa_for(CpuIsa isa) {
    const DirectIsa* d = nullptr;
    if (isa == CpuIsa::avx512) d = direct_isa_avx512();
    if (isa == CpuIsa::avx2) d = direct_isa_avx2();
    return d ? d : &kPortable;
}

}  // namespace fastgemm
