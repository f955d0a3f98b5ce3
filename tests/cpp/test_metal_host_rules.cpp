// Tests of src/metal/host_rules.h, the Metal host's plain-C++ decisions (compiled on Linux).
// Exit status 0 = pass; prints the failing check otherwise.
#include "metal/host_rules.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace fastgemm;
using namespace fastgemm::metal_host;

static int failures = 0;
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                          \
        }                                                                        \
    } while (0)

static DeviceCaps m1_macos15() {
    DeviceCaps c;
    c.name = "Apple M1";
    c.apple_family = 7;
    c.metal3 = true;
    c.mps = true;
    c.max_threads_per_threadgroup = 1024;
    c.max_threadgroup_memory = 32768;
    c.os_major = 15;
    return c;
}

static DeviceCaps paravirtual_runner() {  // GitHub macOS runner: Apple5, no MPS
    DeviceCaps c;
    c.name = "Apple Paravirtual device";
    c.apple_family = 5;
    c.max_threads_per_threadgroup = 1024;
    c.os_major = 14;
    return c;
}

int main() {
    const auto& ladder = metal_ladder::ladder();
    CHECK(!ladder.empty());

    // Device-level support: every kernel runs on an M-series GPU with macOS 26 (Metal 4) ...
    DeviceCaps m4 = m1_macos15();
    m4.apple_family = 9, m4.metal4 = true, m4.os_major = 26;
    for (const auto& k : ladder) CHECK(device_unsupported_reason(k, m4).empty());
    // ... tensor ops need Metal 4, SIMD-group matrices need Apple7.
    int mpp = 0, sgm = 0, plain = 0;
    for (const auto& k : ladder) {
        const std::string on_m1 = device_unsupported_reason(k, m1_macos15());
        const std::string on_runner = device_unsupported_reason(k, paravirtual_runner());
        if (k.msl == metal_ladder::MslVersion::metal4_0) {
            ++mpp;
            CHECK(on_m1.find("Metal 4") != std::string::npos);
            CHECK(!on_runner.empty());
        } else if (uses_simdgroup_matrices(k)) {
            ++sgm;
            CHECK(on_m1.empty());
            CHECK(on_runner.find("MTLGPUFamilyApple7") != std::string::npos);
            CHECK(on_runner.find("MTLGPUFamilyApple5") != std::string::npos);
        } else {
            ++plain;
            CHECK(on_m1.empty());
            CHECK(on_runner.empty());
        }
    }
    CHECK(mpp > 0 && sgm > 0 && plain > 0);
    DeviceCaps tiny = m1_macos15();
    tiny.max_threads_per_threadgroup = 256;
    const auto* naive = metal_ladder::find("naive");  // 32x32 threads
    CHECK(naive && device_unsupported_reason(*naive, tiny).find("1024") != std::string::npos);

    // Pipeline limits.
    const auto* sg = metal_ladder::find("simdgroup_32x32");
    CHECK(sg && pipeline_unsupported_reason(*sg, 32, 1024).empty());
    CHECK(sg && pipeline_unsupported_reason(*sg, 16, 1024).find("threadExecutionWidth is 16") !=
                    std::string::npos);
    CHECK(sg && pipeline_unsupported_reason(*sg, 32, 64).find("only 64") != std::string::npos);
    CHECK(naive && pipeline_unsupported_reason(*naive, 64, 1024).empty());  // any SIMD width

    // Language versions: raw MTLLanguageVersion values (major << 16) + minor.
    const auto v = [](uint32_t a, uint32_t b) { return (a << 16) + b; };
    const metal_ladder::MslVersion m3 = metal_ladder::MslVersion::metal3_2,
                                   m4v = metal_ladder::MslVersion::metal4_0;
    CHECK(language_version(m3, m4) == v(3, 2));
    CHECK(language_version(m4v, m4) == v(4, 0));
    CHECK(language_version(m4v, m1_macos15()) == 0);
    CHECK(language_version(m3, m1_macos15()) == v(3, 2));
    DeviceCaps old = m1_macos15();
    old.os_major = 14;
    CHECK(language_version(m3, old) == v(3, 1));
    old.os_major = 16;  // macOS 26 seen through an old SDK
    CHECK(language_version(m3, old) == v(3, 2));
    old.os_major = 10;
    CHECK(language_version(m3, old) == 0);
    CHECK(v(3, 2) == 196610u && v(4, 0) == 262144u);  // MTLLanguageVersion: major << 16 | minor (docs/architecture.md, "Compiling shaders")

    // No-copy wrapping: page-aligned pointer, whole pages, room for what the consumer addresses.
    alignas(16384) static float page[16384 / 4 * 2];
    CHECK(no_copy_length(page, 100, 100, 16384) == 16384);
    CHECK(no_copy_length(page, 16384, 16384, 16384) == 16384);
    CHECK(no_copy_length(page, 16385, 16385, 16384) == 32768);
    CHECK(no_copy_length(page + 1, 100, 100, 16384) == 0);      // not aligned: copy
    CHECK(no_copy_length(page, 100, 20000, 16384) == 0);        // MPS row gap past the page
    CHECK(no_copy_length(page, 0, 0, 16384) == 0);              // empty: pooled
    CHECK(no_copy_length(nullptr, 100, 100, 16384) == 0);
    CHECK(round_up(1, 16384) == 16384 && round_up(16384, 16384) == 16384);

    // Pipeline keys differ by function and by constant values.
    CHECK(pipeline_key("f", {}) == "f");
    CHECK(pipeline_key("f", {{0, 1}}) != pipeline_key("f", {{0, 2}}));
    CHECK(pipeline_key("f", {{0, 1}}) != pipeline_key("g", {{0, 1}}));

    // Data directories: override, install layout, build tree, no duplicates.
    auto dirs = data_dirs("/env", "/site/fastgemm/lib", "..", "/build/data");
    CHECK(dirs.size() == 3 && dirs[0] == "/env" && dirs[1] == "/site/fastgemm/lib/.." &&
          dirs[2] == "/build/data");
    dirs = data_dirs(nullptr, "", "..", "/build/data");
    CHECK(dirs.size() == 1 && dirs[0] == "/build/data");
    dirs = data_dirs("/x", "/x", ".", "/x");
    CHECK(dirs.size() == 1);
    CHECK(parent_dir("/a/b/libfastgemm.dylib") == "/a/b" && parent_dir("lib.so").empty());
    CHECK(std::string(metallib_name(m3)) == "fastgemm.metallib");
    CHECK(std::string(metallib_name(m4v)) == "fastgemm_metal4.metallib");

    // Flattening: quoted includes inlined once, recursively, with #line markers; <...> kept.
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "fastgemm_flatten_test";
    fs::create_directories(dir);
    std::ofstream(dir / "common.h") << "#pragma once\n#include \"inner.h\"\nconstant int kCommon = 1;\n";
    std::ofstream(dir / "inner.h") << "# pragma once\nconstant int kInner = 2;\n";
    std::ofstream(dir / "k.metal") << "#include <metal_stdlib>\n#include \"common.h\"\n"
                                      "  #  include \"inner.h\"\nkernel void k() {}\n";
    const std::string flat = flatten_shader_source(dir.string(), "k.metal");
    CHECK(flat.find("#include <metal_stdlib>") != std::string::npos);
    CHECK(flat.find("#include \"") == std::string::npos);
    CHECK(flat.find("pragma once") == std::string::npos);
    CHECK(flat.find("kCommon = 1") != std::string::npos);
    CHECK(flat.find("kInner = 2") == flat.rfind("kInner = 2"));  // once
    CHECK(flat.find("#line 1 \"common.h\"") != std::string::npos);
    CHECK(flat.find("#line 3 \"k.metal\"") != std::string::npos);  // back after line 2's include
    CHECK(flat.find("kernel void k()") > flat.find("kCommon"));
    bool threw = false;
    try {
        flatten_shader_source(dir.string(), "missing.metal");
    } catch (const std::runtime_error& e) {
        threw = std::string(e.what()).find("missing.metal") != std::string::npos;
    }
    CHECK(threw);
    // The real shaders flatten too, when this runs from a checkout (FASTGEMM_SHADER_DIR).
    if (const char* shaders = std::getenv("FASTGEMM_SHADER_DIR")) {
        for (const auto& k : ladder) {
            if (!fs::exists(fs::path(shaders) / k.shader)) continue;
            const std::string s = flatten_shader_source(shaders, k.shader);
            CHECK(s.find("#include \"") == std::string::npos);
            CHECK(s.find(k.function) != std::string::npos || s.find("host_name") != std::string::npos);
        }
    }
    fs::remove_all(dir);

    if (failures) {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("test_metal_host_rules: all checks passed\n");
    return 0;
}
