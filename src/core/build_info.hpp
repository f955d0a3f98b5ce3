// What this build of fastgemm is: version, compiler, flags. Shown by `fastgemm info`
// because seed 003 showed the same loop moving 60x between -O levels.
#pragma once

#include <string>

namespace fastgemm {

std::string version();
std::string compiler();       // "GCC 12.2.0", "Clang 17.0.0", "AppleClang ..."
std::string build_flags();    // optimisation level and flags of the loop ladder
std::string cpu_model();      // "AMD EPYC 9B14", from the OS
std::string cpu_isa();        // "avx512f avx2 fma sse2", what the CPU offers (not what we use)

}  // namespace fastgemm
