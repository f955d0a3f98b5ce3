// MetalContext (see metal_context.h). Metal calls used, all described in docs/architecture.md
// unless noted: MTLCreateSystemDefaultDevice, newCommandQueue, supportsFamily:,
// maxThreadsPerThreadgroup, maxThreadgroupMemoryLength, newLibraryWithURL:error:,
// newLibraryWithSource:options:error:, MTLCompileOptions (languageVersion, fastMathEnabled,
// requiredThreadsPerThreadgroup), newFunctionWithName:, newFunctionWithName:constantValues:error:,
// MTLFunctionConstantValues setConstantValue:type:atIndex:, newComputePipelineStateWithFunction:error:,
// threadExecutionWidth, maxTotalThreadsPerThreadgroup; MPSSupportsMTLDevice (cited below).
#import "metal/metal_context.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "core/backends.hpp"

#if !defined(FASTGEMM_SYNTAX_CHECK_NO_MPS)
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>
#endif

// Set by src/metal/CMakeLists.txt: the installed data directory relative to the directory of
// libfastgemm, and the build tree's data directory (metallibs and a copy of shaders/).
#ifndef FASTGEMM_METAL_LIB_TO_DATA
#define FASTGEMM_METAL_LIB_TO_DATA ".."
#endif
#ifndef FASTGEMM_METAL_BUILD_DATA_DIR
#define FASTGEMM_METAL_BUILD_DATA_DIR ""
#endif

namespace fastgemm::metal_host {

namespace {

using metal_ladder::LadderKernel;
using metal_ladder::MslVersion;

std::string utf8(NSString* s) { return s && s.UTF8String ? std::string(s.UTF8String) : std::string(); }

std::string describe(NSError* error) {
    if (error == nil) return "no error object";
    return utf8(error.localizedDescription);
}

bool is_file(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Directory of the shared library that holds this code (libfastgemm), from dladdr.
std::string library_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&fastgemm::register_metal_backend), &info) &&
        info.dli_fname)
        return parent_dir(info.dli_fname);
    return {};
}

DeviceCaps probe_caps(id<MTLDevice> dev) {
    DeviceCaps caps;
    caps.name = utf8(dev.name);
    // Highest Apple family: families are cumulative, checked from the top (docs/architecture.md:
    // GPU families). Raw values for Apple10 (1010) and Metal4 (5002): those enumerators
    // postdate the macOS 14 SDK.
    for (int n = 10; n >= 1; --n) {
        if ([dev supportsFamily:static_cast<MTLGPUFamily>(1000 + n)]) {
            caps.apple_family = n;
            break;
        }
    }
    caps.metal3 = [dev supportsFamily:static_cast<MTLGPUFamily>(5001)];  // MTLGPUFamilyMetal3
    caps.metal4 = [dev supportsFamily:static_cast<MTLGPUFamily>(5002)];  // MTLGPUFamilyMetal4
#if !defined(FASTGEMM_SYNTAX_CHECK_NO_MPS)
    // MPSSupportsMTLDevice(_:): "Determines whether the Metal Performance Shaders framework
    // supports a Metal device" (developer.apple.com/documentation/metalperformanceshaders/
    // mpssupportsmtldevice(_:)). GitHub's paravirtual runner GPU is one that it rejects.
    caps.mps = MPSSupportsMTLDevice(dev);
#endif
    const MTLSize t = dev.maxThreadsPerThreadgroup;
    // maxThreadsPerThreadgroup is per axis; the total is bounded by the x extent (1024 on
    // every Apple GPU observed; docs/architecture.md: Pipelines), which is the figure a 1D
    // ladder launch meets.
    caps.max_threads_per_threadgroup = uint32_t(t.width);
    caps.max_threadgroup_memory = uint32_t(dev.maxThreadgroupMemoryLength);
    const NSOperatingSystemVersion os = [NSProcessInfo processInfo].operatingSystemVersion;
    caps.os_major = int(os.majorVersion);
    caps.os_minor = int(os.minorVersion);
    return caps;
}

// Why get() returned nullptr, filled once by get().
std::string& failure_reason() {
    static std::string reason;
    return reason;
}

}  // namespace

MetalContext::MetalContext(id<MTLDevice> device, id<MTLCommandQueue> queue)
    : device_(device), queue_(queue), caps_(probe_caps(device)),
      pool_(std::make_unique<BufferPool>(device)),
      data_dirs_(data_dirs(std::getenv("FASTGEMM_METAL_DIR"), library_dir(),
                           FASTGEMM_METAL_LIB_TO_DATA, FASTGEMM_METAL_BUILD_DATA_DIR)) {}

MetalContext* MetalContext::get() {
    // Created once, never destroyed: pipelines and buffers stay valid until the process ends
    // and nothing depends on static destruction order.
    static MetalContext* context = []() -> MetalContext* {
        @autoreleasepool {
            id<MTLDevice> dev = MTLCreateSystemDefaultDevice();
            if (dev == nil) {
                failure_reason() = "MTLCreateSystemDefaultDevice() returned no device (no Metal "
                                   "GPU, or a virtual machine without Metal)";
                return nullptr;
            }
            id<MTLCommandQueue> q = [dev newCommandQueue];
            if (q == nil) {
                failure_reason() = "the Metal device " + utf8(dev.name) + " gave no command queue";
                return nullptr;
            }
            return new MetalContext(dev, q);
        }
    }();
    return context;
}

std::string MetalContext::unavailable_reason() {
    return get() ? std::string() : failure_reason();
}

MetalContext& MetalContext::require() {
    if (MetalContext* c = get()) return *c;
    throw BackendUnavailableError("metal backend unavailable: " + unavailable_reason());
}

id<MTLLibrary> MetalContext::precompiled_library(MslVersion msl) {
    const int key = int(msl);
    if (auto it = metallibs_.find(key); it != metallibs_.end()) return it->second;
    id<MTLLibrary> lib = nil;
    std::string note = std::string(metallib_name(msl)) + " not found";
    for (const std::string& dir : data_dirs_) {
        const std::string path = dir + "/" + metallib_name(msl);
        if (!is_file(path)) continue;
        NSError* error = nil;
        NSURL* url = [NSURL fileURLWithPath:[NSString stringWithUTF8String:path.c_str()]];
        lib = [device_ newLibraryWithURL:url error:&error];
        note = lib ? "precompiled " + path
                   : "precompiled " + path + " failed to load (" + describe(error) +
                         "); shaders are compiled at run time instead";
        break;
    }
    metallibs_[key] = lib;  // nil is remembered too: look once
    metallib_notes_[key] = note;
    return lib;
}

id<MTLLibrary> MetalContext::source_library(const LadderKernel& k) {
    if (auto it = source_libraries_.find(k.shader); it != source_libraries_.end()) return it->second;
    if (auto it = compile_failures_.find(k.shader); it != compile_failures_.end())
        throw KernelError(it->second);

    std::string source, tried;
    for (const std::string& dir : data_dirs_) {
        const std::string shader_dir = dir + "/shaders";
        if (!is_file(shader_dir + "/" + k.shader)) {
            tried += (tried.empty() ? "" : ", ") + shader_dir;
            continue;
        }
        source = flatten_shader_source(shader_dir, k.shader);  // throws on unreadable includes
        break;
    }
    if (source.empty()) {
        throw BackendUnavailableError("metal kernel '" + k.name + "': no precompiled " +
                                      metallib_name(k.msl) + " holds " + k.function +
                                      " and its source " + k.shader + " was not found in " + tried +
                                      " (set FASTGEMM_METAL_DIR to the folder holding shaders/)");
    }

    const uint32_t version = language_version(k.msl, caps_);
    MTLCompileOptions* options = [MTLCompileOptions new];
    options.languageVersion = static_cast<MTLLanguageVersion>(version);
    // Safe math for FP32-class kernels (docs/architecture.md: Compiling shaders).
    // fastMathEnabled = NO sets mathMode to safe on macOS 15+, per Apple's
    // fastMathEnabled/mathMode pages; the property is deprecated there but present on every
    // macOS this backend supports.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    options.fastMathEnabled = NO;
#pragma clang diagnostic pop
#if defined(__MAC_OS_X_VERSION_MAX_ALLOWED) && __MAC_OS_X_VERSION_MAX_ALLOWED >= 260000
    // Cooperative-tensor pipelines must declare their threadgroup size (docs/architecture.md:
    // Pipelines, and open question 5 there); every MSL 4 ladder kernel of one shader file uses
    // the same size.
    if (k.msl == MslVersion::metal4_0) {
        if (@available(macOS 26.0, *)) {
            options.requiredThreadsPerThreadgroup =
                MTLSizeMake(k.threads.x, k.threads.y, k.threads.z);
        }
    }
#endif
    NSError* error = nil;
    NSString* text = [NSString stringWithUTF8String:source.c_str()];
    id<MTLLibrary> lib = [device_ newLibraryWithSource:text options:options error:&error];
    if (lib == nil) {
        std::string message = "metal kernel '" + k.name + "': compiling " + k.shader +
                              " at run time (MSL " + std::to_string(version >> 16) + "." +
                              std::to_string(version & 0xffff) + ") failed: " + describe(error);
        compile_failures_[k.shader] = message;
        throw KernelError(message);
    }
    source_libraries_[k.shader] = lib;
    return lib;
}

id<MTLFunction> MetalContext::function(const LadderKernel& k, const FunctionConstants& constants) {
    NSString* name = [NSString stringWithUTF8String:k.function.c_str()];
    MTLFunctionConstantValues* values = nil;
    if (!constants.empty()) {
        values = [MTLFunctionConstantValues new];
        for (const auto& [index, value] : constants) {
            const int32_t v = value;
            [values setConstantValue:&v type:MTLDataTypeInt atIndex:index];
        }
    }
    auto lookup = [&](id<MTLLibrary> lib, std::string& error_text) -> id<MTLFunction> {
        if (lib == nil) return nil;
        if (values == nil) return [lib newFunctionWithName:name];
        NSError* error = nil;
        id<MTLFunction> f = [lib newFunctionWithName:name constantValues:values error:&error];
        if (f == nil) error_text = describe(error);
        return f;
    };
    std::string error_text;
    if (id<MTLFunction> f = lookup(precompiled_library(k.msl), error_text)) return f;
    if (id<MTLFunction> f = lookup(source_library(k), error_text)) return f;
    throw KernelError("metal kernel '" + k.name + "': function " + k.function + " is not in " +
                      k.shader + (error_text.empty() ? "" : " (" + error_text + ")"));
}

id<MTLComputePipelineState> MetalContext::pipeline(const LadderKernel& k,
                                                   const FunctionConstants& constants) {
    if (std::string why = device_unsupported_reason(k, caps_); !why.empty()) {
        throw BackendUnavailableError("metal kernel '" + k.name + "' is unavailable on this GPU (" +
                                      caps_.name + "): " + why);
    }
    const std::string key = pipeline_key(k.function, constants);
    std::lock_guard<std::mutex> lock(mutex_);
    id<MTLComputePipelineState> ps = nil;
    if (auto it = pipelines_.find(key); it != pipelines_.end()) {
        ps = it->second;
    } else {
        std::string failure;
        @autoreleasepool {
            id<MTLFunction> f = function(k, constants);  // throws with the compiler's message
            NSError* error = nil;
            ps = [device_ newComputePipelineStateWithFunction:f error:&error];
            if (ps == nil) failure = describe(error);
        }
        if (ps == nil)
            throw KernelError("metal kernel '" + k.name + "': pipeline creation failed: " + failure);
        pipelines_[key] = ps;
    }
    const std::string why = pipeline_unsupported_reason(
        k, uint32_t(ps.threadExecutionWidth), uint32_t(ps.maxTotalThreadsPerThreadgroup));
    if (!why.empty()) {
        throw BackendUnavailableError("metal kernel '" + k.name + "' is unavailable on this GPU (" +
                                      caps_.name + "): " + why);
    }
    return ps;
}

std::vector<std::pair<std::string, std::string>> MetalContext::properties() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<std::string, std::string>> out;
    auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
    out.emplace_back("gpu", caps_.name);
    out.emplace_back("gpu family", caps_.apple_family
                                       ? "MTLGPUFamilyApple" + std::to_string(caps_.apple_family)
                                       : std::string("none of MTLGPUFamilyApple1-10"));
    out.emplace_back("metal3", yes_no(caps_.metal3));
    out.emplace_back("metal4 (MPP tensor ops)", yes_no(caps_.metal4));
    out.emplace_back("mps", yes_no(caps_.mps));
    out.emplace_back("macos", std::to_string(caps_.os_major) + "." + std::to_string(caps_.os_minor));
    out.emplace_back("unified memory", yes_no(device_.hasUnifiedMemory));
    out.emplace_back("recommended working set",
                     std::to_string(device_.recommendedMaxWorkingSetSize >> 20) + " MiB");
    out.emplace_back("max threads per threadgroup", std::to_string(caps_.max_threads_per_threadgroup));
    out.emplace_back("max threadgroup memory", std::to_string(caps_.max_threadgroup_memory) + " B");
    out.emplace_back("page size", std::to_string(pool_->page_size()) + " B");
    std::string dirs;
    for (const std::string& d : data_dirs_) dirs += (dirs.empty() ? "" : ":") + d;
    out.emplace_back("data dirs", dirs);
    for (MslVersion msl : {MslVersion::metal3_2, MslVersion::metal4_0}) {
        const int key = int(msl);
        auto it = metallib_notes_.find(key);
        out.emplace_back(metallib_name(msl),
                         it == metallib_notes_.end() ? "not loaded yet (loaded on first use)"
                                                     : it->second);
    }
    return out;
}

}  // namespace fastgemm::metal_host
