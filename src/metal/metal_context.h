// MetalContext: the process's one Metal device, command queue, shader libraries and pipeline
// cache, created on first use and kept for the life of the process (Objective-C++ only).
//
// Libraries: a kernel's function comes from the precompiled fastgemm*.metallib that CMake built
// with `xcrun metal` when the toolchain existed, else from its shader file compiled at run time
// with newLibraryWithSource:options:error: (seed 003's Command-Line-Tools situation), with the
// compiler's message in the error when that fails. Pipelines are cached by function name and
// function-constant values. Capability checks (GPU family, OS, pipeline limits) turn a kernel
// this GPU cannot run into BackendUnavailableError with the reason, never a crash.
//
// Every Metal call used here and in the other .mm files is described in docs/architecture.md
// (Apple API facts the host relies on) unless a comment cites Apple's page.
#pragma once

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/kernel.hpp"
#include "metal/buffer_pool.h"
#include "metal/host_rules.h"
#include "metal/ladder.hpp"

namespace fastgemm::metal_host {

// Function-constant values of one specialisation: [[function_constant(index)]] -> int value.
using FunctionConstants = std::vector<std::pair<uint32_t, int32_t>>;

class MetalContext {
public:
    // The process-wide context, or nullptr when this machine has no usable Metal device
    // (unavailable_reason() says why). Never throws.
    static MetalContext* get();
    static std::string unavailable_reason();
    // get(), or BackendUnavailableError with the reason.
    static MetalContext& require();

    id<MTLDevice> device() const { return device_; }
    id<MTLCommandQueue> queue() const { return queue_; }
    const DeviceCaps& caps() const { return caps_; }
    BufferPool& buffers() { return *pool_; }

    // The pipeline of a ladder kernel, built once per (function, constants). Throws
    // BackendUnavailableError when this GPU or OS cannot run the kernel (with the reason) and
    // KernelError when its shader fails to compile (with the compiler's message).
    id<MTLComputePipelineState> pipeline(const metal_ladder::LadderKernel& k,
                                         const FunctionConstants& constants = {});

    // Where each library comes from ("precompiled <path>", "run-time compile of <dir>", or
    // why neither), for `fastgemm info`.
    std::vector<std::pair<std::string, std::string>> properties();

private:
    MetalContext(id<MTLDevice> device, id<MTLCommandQueue> queue);

    id<MTLFunction> function(const metal_ladder::LadderKernel& k,
                             const FunctionConstants& constants);
    // The precompiled library for a language version, or nil (missing, or failed to load:
    // the failure is recorded in metallib_notes_ and the run-time compile takes over).
    id<MTLLibrary> precompiled_library(metal_ladder::MslVersion msl);
    // The library compiled at run time from one shader file; throws KernelError.
    id<MTLLibrary> source_library(const metal_ladder::LadderKernel& k);

    id<MTLDevice> device_;
    id<MTLCommandQueue> queue_;
    DeviceCaps caps_;
    std::unique_ptr<BufferPool> pool_;
    std::vector<std::string> data_dirs_;

    std::mutex mutex_;  // guards everything below
    std::map<std::string, id<MTLComputePipelineState>> pipelines_;
    std::map<int, id<MTLLibrary>> metallibs_;
    std::map<int, std::string> metallib_notes_;
    std::map<std::string, id<MTLLibrary>> source_libraries_;  // by shader file
    std::map<std::string, std::string> compile_failures_;     // by shader file
};

// Encodes one command buffer with `encode(commandBuffer)`, commits it, waits for it and returns
// its times: device = GPUEndTime - GPUStartTime (docs/architecture.md: Dispatch and timing),
// host = encode + commit + wait on the steady clock. A command buffer that ends in error
// raises KernelError with Metal's message. Shared by the ladder kernels and the MPS baseline
// so both time alike.
template <class Encode>
Timing run_command_buffer(MetalContext& ctx, const std::string& what, Encode&& encode) {
    Timing t;
    std::string error;  // thrown after the autorelease pool has drained
    const auto start = std::chrono::steady_clock::now();
    @autoreleasepool {
        id<MTLCommandBuffer> cb = [ctx.queue() commandBuffer];
        if (cb == nil) {
            error = what + ": the Metal command queue returned no command buffer";
        } else {
            encode(cb);
            [cb commit];
            [cb waitUntilCompleted];
            t.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (cb.status != MTLCommandBufferStatusCompleted) {
                NSString* message = cb.error ? cb.error.localizedDescription : @"no error object";
                error = what + ": the Metal command buffer ended with status " +
                        std::to_string(static_cast<long>(cb.status)) + " (5 = error): " +
                        std::string(message.UTF8String ? message.UTF8String : "?");
            } else {
                t.device_s = cb.GPUEndTime - cb.GPUStartTime;
            }
        }
    }
    if (!error.empty()) throw KernelError(error);
    return t;
}

}  // namespace fastgemm::metal_host
