// Run-time choice of the packed kernels' instruction set (see cpu_isa.hpp).
#include "cpu/packed/cpu_isa.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "cpu/packed/micro_kernel.hpp"

namespace fastgemm {

const char* to_string(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::scalar: return "scalar";
        case CpuIsa::avx2: return "avx2";
        case CpuIsa::avx512: return "avx512";
        case CpuIsa::neon: return "neon";
    }
    return "?";
}

CpuIsa parse_cpu_isa(const std::string& name) {
    if (name == "scalar" || name == "portable") return CpuIsa::scalar;
    if (name == "avx2" || name == "avx2+fma") return CpuIsa::avx2;
    if (name == "avx512" || name == "avx512f") return CpuIsa::avx512;
    if (name == "neon") return CpuIsa::neon;
    throw std::invalid_argument("unknown CPU instruction set '" + name +
                                "' (expected scalar, avx2, avx512 or neon)");
}

namespace {

bool cpu_has(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::scalar: return true;
#if defined(__x86_64__) || defined(__i386__)
        // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
        case CpuIsa::avx2:
            __builtin_cpu_init();
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case CpuIsa::avx512:
            // The kernel uses AVX-512F only (masked loads/stores included).
            __builtin_cpu_init();
            return __builtin_cpu_supports("avx512f");
#endif
#if defined(__aarch64__)
        case CpuIsa::neon: return true;  // Advanced SIMD is mandatory in AArch64
#endif
        default: return false;
    }
}

}  // namespace

bool cpu_isa_supported(CpuIsa isa) { return micro_kernel_for(isa) != nullptr && cpu_has(isa); }

std::vector<CpuIsa> supported_cpu_isas() {
    // Preference order. On Zen 4, whose 512-bit FMAs run as two 256-bit halves (same
    // FMA peak as AVX2: 117 GFLOP/s per core measured), the AVX-512 kernel still wins by
    // ~3 % at 1024-2048 (109 vs 106, 107 vs 104 GFLOP/s, 1 thread): twice the registers
    // give a 12x32 tile instead of 6x16, halving loads and broadcasts per FMA.
    std::vector<CpuIsa> isas;
    for (CpuIsa isa : {CpuIsa::avx512, CpuIsa::avx2, CpuIsa::neon, CpuIsa::scalar})
        if (cpu_isa_supported(isa)) isas.push_back(isa);
    return isas;
}

CpuIsa selected_cpu_isa() {
    static const CpuIsa isa = [] {
        const CpuIsa best = supported_cpu_isas().front();
        const char* env = std::getenv("FASTGEMM_CPU_ISA");
        if (!env || !*env) return best;
        // A bad setting must not make the library unusable: say so once and ignore it.
        try {
            CpuIsa forced = parse_cpu_isa(env);
            if (cpu_isa_supported(forced)) return forced;
            std::fprintf(stderr, "fastgemm: FASTGEMM_CPU_ISA=%s: this CPU or build cannot run it; using %s\n",
                         env, to_string(best));
        } catch (const std::invalid_argument& e) {
            std::fprintf(stderr, "fastgemm: FASTGEMM_CPU_ISA ignored: %s\n", e.what());
        }
        return best;
    }();
    return isa;
}

std::string cpu_isa_name() {
    const MicroKernel* mk = micro_kernel_for(selected_cpu_isa());
    return std::string(to_string(selected_cpu_isa())) + " (" + std::to_string(mk->mr) + "x" +
           std::to_string(mk->nr) + ")";
}

}  // namespace fastgemm
