// Which SIMD instruction set the packed CPU kernels run, chosen at run time.
//
// One build carries a micro-kernel per instruction set (each compiled in its own
// translation unit with its own flags); the CPU's features decide which may run. The
// environment variable FASTGEMM_CPU_ISA (scalar, avx2, avx512, neon) forces a lower
// path, e.g. to test the AVX2 micro-kernel on an AVX-512 machine; a path the CPU
// lacks (or an unknown name) is ignored with a warning on stderr, rather than crashing
// later on an illegal instruction.
#pragma once

#include <string>
#include <vector>

namespace fastgemm {

enum class CpuIsa { scalar, avx2, avx512, neon };

const char* to_string(CpuIsa isa);  // "scalar", "avx2", "avx512", "neon"
// Parses the names above (also "avx2+fma", "avx512f"); throws std::invalid_argument.
CpuIsa parse_cpu_isa(const std::string& name);

// True when this CPU (and OS) can execute `isa` and this build contains its kernel.
bool cpu_isa_supported(CpuIsa isa);
// Every supported instruction set, best first; scalar is always last.
std::vector<CpuIsa> supported_cpu_isas();
// The path the packed kernels use: FASTGEMM_CPU_ISA when set and supported, otherwise
// the first of supported_cpu_isas(). Read once per process.
CpuIsa selected_cpu_isa();
// Human-readable name of the selected path for `fastgemm info`, e.g. "avx512 (12x32)".
std::string cpu_isa_name();

}  // namespace fastgemm
