// What this build of fastgemm is: version, the source it was built from, compiler,
// flags. Shown by `fastgemm info` and recorded in every result file, because the same
// loop moves 60x between -O levels and a number is only worth its provenance.
#pragma once

#include <string>

namespace fastgemm {

std::string version();
std::string compiler();       // "GCC 12.2.0", "Clang 17.0.0", "AppleClang ..."
std::string build_flags();    // optimisation level and flags of the loop ladder
std::string build_type();     // CMAKE_BUILD_TYPE: "Release", ...
std::string cxx_flags();      // CMAKE_CXX_FLAGS plus those of the build type

// The source tree as it was when this library was built (not wherever it runs): the
// commit hash, `git describe --always --tags --dirty`, and whether tracked files had
// uncommitted changes ("true"/"false"). "unknown" when the source was not a git
// checkout of its own (an sdist, or a copy inside someone else's repository).
std::string source_commit();
std::string source_describe();
std::string source_dirty();
std::string cpu_model();      // "AMD EPYC 9B14", from the OS
std::string cpu_isa();        // "avx512f avx2 fma sse2", what the CPU offers (not what we use)

}  // namespace fastgemm
