// The decisions of the Metal host that need no Apple API, as plain C++17.
//
// The Objective-C++ files (src/metal/*.mm) only ask Metal for facts (GPU family, pipeline
// limits, page size) and carry out what these functions decide: whether a ladder kernel can
// run on this GPU and why not, which MSL language version to compile it with, whether a
// caller's array can be wrapped without a copy, where the shaders and metallibs live, and
// how a shader file becomes one self-contained source for newLibraryWithSource:. Keeping the
// decisions here means they compile and are tested on Linux (test_metal_host_rules.cpp), although
// the code that calls Metal can only be type-checked there (scripts/check_objc.sh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "metal/ladder.hpp"

namespace fastgemm::metal_host {

using metal_ladder::LadderKernel;
using metal_ladder::MslVersion;

// What the host learned from the device (MetalContext fills it once).
struct DeviceCaps {
    std::string name;                    // MTLDevice.name, "Apple M4 Pro"
    int apple_family = 0;                // highest N with supportsFamily(MTLGPUFamilyAppleN), 0 = none
    bool metal3 = false;                 // MTLGPUFamilyMetal3
    bool metal4 = false;                 // MTLGPUFamilyMetal4 (macOS 26+, M1/A14 or newer)
    bool mps = false;                    // MPSSupportsMTLDevice
    uint32_t max_threads_per_threadgroup = 0;  // MTLDevice.maxThreadsPerThreadgroup, x*y*z bound
    uint32_t max_threadgroup_memory = 0;       // MTLDevice.maxThreadgroupMemoryLength, bytes
    int os_major = 0, os_minor = 0;            // NSProcessInfo.operatingSystemVersion
};

inline uint32_t thread_count(const metal_ladder::Size3& s) { return s.x * s.y * s.z; }

// Kernels whose SIMD-groups cooperate on matrices (simdgroup_matrix, MPP execution_simdgroups)
// say so with a fixed SIMD width in the ladder. Both need an Apple7 (M1/A14) or newer GPU:
// docs/architecture.md: GPU families (simdgroup_matrix: Apple7+; Metal 4: M1/A14 or later).
inline bool uses_simdgroup_matrices(const LadderKernel& k) { return k.simd_width != 0; }

// Why `k` cannot run on this device, from device-level facts alone; empty when it can.
// (Pipeline limits are checked after compilation: pipeline_unsupported_reason.)
inline std::string device_unsupported_reason(const LadderKernel& k, const DeviceCaps& caps) {
    if (k.msl == MslVersion::metal4_0 && !caps.metal4) {
        return "uses MetalPerformancePrimitives tensor ops (MSL 4.0), which need Metal 4 "
               "(MTLGPUFamilyMetal4: macOS 26 or later on an M1/A14 or newer GPU); this "
               "device/OS does not report it";
    }
    if (uses_simdgroup_matrices(k) && caps.apple_family < 7) {
        return "uses SIMD-group matrices, which need MTLGPUFamilyApple7 (M1/A14) or newer; "
               "this GPU reports " +
               (caps.apple_family ? "MTLGPUFamilyApple" + std::to_string(caps.apple_family)
                                  : std::string("no Apple GPU family"));
    }
    const uint32_t threads = thread_count(k.threads);
    if (caps.max_threads_per_threadgroup && threads > caps.max_threads_per_threadgroup) {
        return "needs " + std::to_string(threads) + " threads per threadgroup; this GPU allows " +
               std::to_string(caps.max_threads_per_threadgroup);
    }
    return {};
}

// Why the compiled pipeline cannot run `k`; empty when it can. threadExecutionWidth and
// maxTotalThreadsPerThreadgroup are per pipeline (docs/architecture.md: Pipelines): the latter
// drops with register pressure, so a kernel that fits one GPU may not fit another.
inline std::string pipeline_unsupported_reason(const LadderKernel& k, uint32_t execution_width,
                                               uint32_t max_total_threads) {
    const uint32_t threads = thread_count(k.threads);
    if (threads > max_total_threads) {
        return "needs " + std::to_string(threads) +
               " threads per threadgroup, but its pipeline allows only " +
               std::to_string(max_total_threads) + " on this GPU (maxTotalThreadsPerThreadgroup)";
    }
    if (k.simd_width != 0 && execution_width != k.simd_width) {
        return "assumes SIMD-groups of " + std::to_string(k.simd_width) +
               " threads, but threadExecutionWidth is " + std::to_string(execution_width);
    }
    return {};
}

// Raw MTLLanguageVersion, (major << 16) + minor (docs/architecture.md: Compiling shaders), to
// compile `msl` with on this device; 0 when no version here can compile it. The raw form is
// used because the enumerators for 3.2 and 4.0 are missing from older SDK headers.
inline uint32_t language_version(MslVersion msl, const DeviceCaps& caps) {
    auto v = [](uint32_t major, uint32_t minor) { return (major << 16) + minor; };
    if (msl == MslVersion::metal4_0) return caps.metal4 ? v(4, 0) : 0;
    // Ladder kernels below MSL 4 need at most 3.2 and at least 2.3 (simdgroup_matrix;
    // docs/architecture.md: SIMD-group matrices).
    // A Metal 4 device runs macOS 26, which also compiles 3.2. Otherwise go by the OS release.
    // macOS 26 reports itself as 16.x to programs built against an older SDK [3P], so any
    // major version from 15 up counts as "15 or later".
    if (caps.metal4 || caps.os_major >= 15) return v(3, 2);
    if (caps.os_major == 14) return v(3, 1);
    if (caps.os_major == 13) return v(3, 0);
    if (caps.os_major == 12) return v(2, 4);
    if (caps.os_major == 11) return v(2, 3);
    return 0;
}

// The precompiled library that holds a kernel of this language version. CMake builds them
// from shaders/*.metal with the same names (src/metal/CMakeLists.txt); two files, so that a
// toolchain without MSL 4.0 still produces the first.
inline const char* metallib_name(MslVersion msl) {
    return msl == MslVersion::metal4_0 ? "fastgemm_metal4.metallib" : "fastgemm.metallib";
}

inline size_t round_up(size_t n, size_t multiple) {
    return multiple ? (n + multiple - 1) / multiple * multiple : n;
}

// Bytes to wrap with newBufferWithBytesNoCopy:length:options:deallocator: so that the GPU sees
// the caller's array in place, or 0 when it must be copied. Apple requires a page-aligned
// pointer and a length that is a whole number of pages (docs/architecture.md: Buffers); `used`
// is the span the kernel touches, `needed` what the consumer may address (MPS addresses rows *
// rowBytes, one row gap past the span). The length rounds `used` up to whole pages: those
// pages belong to the caller's allocation because its start is page-aligned and the VM maps
// whole pages, and the GPU never writes outside the span.
inline size_t no_copy_length(const void* p, size_t used, size_t needed, size_t page) {
    if (p == nullptr || page == 0 || used == 0) return 0;
    if (reinterpret_cast<uintptr_t>(p) % page != 0) return 0;
    const size_t length = round_up(used, page);
    return needed <= length ? length : 0;
}

// Key of the pipeline-state cache: one pipeline per function and set of function-constant
// values (index -> value), so a specialised kernel never reuses another's pipeline.
inline std::string pipeline_key(const std::string& function,
                                const std::vector<std::pair<uint32_t, int32_t>>& constants) {
    std::string key = function;
    for (const auto& [index, value] : constants)
        key += "|" + std::to_string(index) + "=" + std::to_string(value);
    return key;
}

// Directories that may hold the Metal data (the metallibs and shaders/), most specific first:
// an explicit override (FASTGEMM_METAL_DIR), the installed package (the library's directory
// plus the install-time relative path to the data directory), then the build tree.
inline std::vector<std::string> data_dirs(const char* override_dir, const std::string& library_dir,
                                          const std::string& library_to_data,
                                          const std::string& build_dir) {
    std::vector<std::string> dirs;
    auto add = [&](const std::string& d) {
        if (d.empty()) return;
        for (const std::string& seen : dirs)
            if (seen == d) return;
        dirs.push_back(d);
    };
    if (override_dir) add(override_dir);
    if (!library_dir.empty())
        add(library_to_data.empty() || library_to_data == "." ? library_dir
                                                              : library_dir + "/" + library_to_data);
    add(build_dir);
    return dirs;
}

// Directory part of a path ("" for a bare file name).
inline std::string parent_dir(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

namespace detail {

inline bool read_text(const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return true;
}

// `name` when `line` is `#include "name"` (spaces allowed around '#'), else "".
inline std::string quoted_include(const std::string& line) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') return {};
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 7, "include") != 0) return {};
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string::npos || line[i] != '"') return {};
    const size_t end = line.find('"', i + 1);
    return end == std::string::npos ? std::string() : line.substr(i + 1, end - i - 1);
}

inline bool is_pragma_once(const std::string& line) {
    std::istringstream words(line);
    std::string a, b, c;
    words >> a;
    if (a == "#") {
        words >> b >> c;
        return b == "pragma" && c == "once";
    }
    words >> b;
    return a == "#pragma" && b == "once";
}

inline void flatten(const std::string& dir, const std::string& file, std::set<std::string>& seen,
                    std::string& out, int depth) {
    if (depth > 16) throw std::runtime_error("shader includes nest deeper than 16 at " + file);
    std::string text;
    const std::string path = dir + "/" + file;
    if (!read_text(path, text)) throw std::runtime_error("cannot read shader source " + path);
    std::istringstream lines(text);
    std::string line;
    int number = 0;
    out += "#line 1 \"" + file + "\"\n";
    while (std::getline(lines, line)) {
        ++number;
        const std::string inc = quoted_include(line);
        if (!inc.empty()) {
            if (seen.insert(inc).second) flatten(dir, inc, seen, out, depth + 1);
            out += "#line " + std::to_string(number + 1) + " \"" + file + "\"\n";
        } else if (depth > 0 && is_pragma_once(line)) {
            out += "\n";  // the header is inlined once already; keep the line count
        } else {
            out += line;
            out += "\n";
        }
    }
}

}  // namespace detail

// The text of shaders/<file> with every `#include "x"` replaced by x's text (each header once,
// recursively, x relative to `dir`), with #line markers so that compiler messages name the
// original file and line. newLibraryWithSource:options:error: has no include path, so the
// run-time compile needs one self-contained source. <...> includes (metal_stdlib, MPP) stay.
// Throws std::runtime_error naming the file that could not be read.
inline std::string flatten_shader_source(const std::string& dir, const std::string& file) {
    std::set<std::string> seen{file};
    std::string out;
    detail::flatten(dir, file, seen, out, 0);
    return out;
}

}  // namespace fastgemm::metal_host
