#include "build_info.hpp"

#include <fstream>

#include "build_provenance.hpp"  // generated at every build by cmake/provenance.cmake
#include <string>

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#ifndef FASTGEMM_VERSION
#define FASTGEMM_VERSION "0.0.0"
#endif
#ifndef FASTGEMM_LADDER_FLAGS
#define FASTGEMM_LADDER_FLAGS "unknown"
#endif
#ifndef FASTGEMM_BUILD_TYPE
#define FASTGEMM_BUILD_TYPE "unknown"
#endif
#ifndef FASTGEMM_CXX_FLAGS
#define FASTGEMM_CXX_FLAGS ""
#endif

namespace fastgemm {

std::string version() { return FASTGEMM_VERSION; }

std::string compiler() {
#if defined(__clang__)
#if defined(__apple_build_version__)
    return std::string("AppleClang ") + __clang_version__;
#else
    return std::string("Clang ") + __clang_version__;
#endif
#elif defined(__GNUC__)
    return "GCC " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
           std::to_string(__GNUC_PATCHLEVEL__);
#elif defined(_MSC_VER)
    return "MSVC " + std::to_string(_MSC_VER);
#else
    return "unknown compiler";
#endif
}

std::string build_flags() { return FASTGEMM_LADDER_FLAGS; }
std::string build_type() { return FASTGEMM_BUILD_TYPE; }
std::string cxx_flags() { return FASTGEMM_CXX_FLAGS; }

std::string source_commit() { return FASTGEMM_SOURCE_COMMIT; }
std::string source_describe() { return FASTGEMM_SOURCE_DESCRIBE; }
std::string source_dirty() { return FASTGEMM_SOURCE_DIRTY; }

std::string cpu_model() {
#if defined(__APPLE__)
    char buf[256];
    size_t len = sizeof(buf);
    if (sysctlbyname("machdep.cpu.brand_string", buf, &len, nullptr, 0) == 0) return std::string(buf);
    return "Apple CPU";
#else
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        auto at = line.find(':');
        if (at == std::string::npos) continue;
        std::string key = line.substr(0, at);
        if (key.find("model name") == 0 || key.find("Model") == 0 || key.find("Hardware") == 0) {
            std::string v = line.substr(at + 1);
            v.erase(0, v.find_first_not_of(" \t"));
            return v;
        }
    }
    return "unknown CPU";
#endif
}

std::string cpu_isa() {
    std::string out;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    auto add = [&](bool has, const char* name) {
        if (has) out += (out.empty() ? "" : " ") + std::string(name);
    };
    add(__builtin_cpu_supports("avx512f"), "avx512f");
    add(__builtin_cpu_supports("avx2"), "avx2");
    add(__builtin_cpu_supports("fma"), "fma");
    add(__builtin_cpu_supports("avx"), "avx");
    add(__builtin_cpu_supports("sse4.2"), "sse4.2");
    add(true, "sse2");
#elif defined(__aarch64__)
    out = "neon asimd";
#else
    out = "portable";
#endif
    return out;
}

}  // namespace fastgemm
