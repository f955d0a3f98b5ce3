// One fastgemm::Kernel per Metal ladder entry (backend "metal").
//
// bind() prepares everything once: the pipeline (cached in MetalContext), the operands as
// GPU buffers (the caller's memory in place when page-aligned, else pooled copies), the
// params struct and the launch geometry, both from metal_ladder (shared with metal-emu, so a
// dispatch is described in one place). run() is then one command buffer holding one dispatch,
// timed by GPU timestamps and the host clock; finish() copies C back when it was copied.
//
// Metal calls (docs/architecture.md: Dispatch and timing): computeCommandEncoder,
// setComputePipelineState:, setBuffer:offset:atIndex:, setBytes:length:atIndex:,
// setThreadgroupMemoryLength:atIndex:, dispatchThreadgroups:threadsPerThreadgroup:, endEncoding.
#import "metal/metal_context.h"
#import "metal/metal_kernels.h"

#include <string>

namespace fastgemm::metal_host {

namespace {

using metal_ladder::GemmParams;
using metal_ladder::LadderKernel;
using metal_ladder::LaunchGeometry;

MTLSize mtl_size(const metal_ladder::Size3& s) { return MTLSizeMake(s.x, s.y, s.z); }

class LadderLaunch final : public Launch {
public:
    LadderLaunch(MetalContext& ctx, const LadderKernel& k, const Problem& p, const float* A,
                 const float* B, float* C)
        : ctx_(ctx), label_("metal kernel '" + k.name + "'"), C_(C) {
        if (!metal_ladder::fits_32bit(p)) {
            throw ShapeError("metal kernel '" + k.name + "': " + p.describe() +
                             " does not fit the shaders' 32-bit indices");
        }
        pipeline_ = ctx.pipeline(k);
        geometry_ = metal_ladder::launch_geometry(k, p);
        params_ = metal_ladder::make_params(p);
        for (auto& [index, bytes] : geometry_.threadgroup_memory) {
            // setThreadgroupMemoryLength:atIndex: takes multiples of 16 bytes (Apple's page for
            // the method); the device limit is maxThreadgroupMemoryLength (docs/architecture.md:
            // Shader arguments and barriers).
            bytes = uint32_t(round_up(bytes, 16));
            if (ctx.caps().max_threadgroup_memory && bytes > ctx.caps().max_threadgroup_memory) {
                throw BackendUnavailableError(
                    "metal kernel '" + k.name + "' needs " + std::to_string(bytes) +
                    " bytes of threadgroup memory; this GPU allows " +
                    std::to_string(ctx.caps().max_threadgroup_memory));
            }
        }
        BufferPool& pool = ctx.buffers();
        a_ = DeviceMatrix(pool, A, p.a_rows(), p.a_cols(), p.lda, 0, true);
        b_ = DeviceMatrix(pool, B, p.b_rows(), p.b_cols(), p.ldb, 0, true);
        // C is read only when beta != 0 (the shaders never load it otherwise).
        c_ = DeviceMatrix(pool, C, p.M, p.N, p.ldc, 0, p.beta != 0.0f);
    }

    Timing run() override {
        return run_command_buffer(ctx_, label_, [&](id<MTLCommandBuffer> cb) {
            id<MTLComputeCommandEncoder> enc = [cb computeCommandEncoder];
            [enc setComputePipelineState:pipeline_];
            [enc setBuffer:a_.buffer() offset:0 atIndex:metal_ladder::kBufferA];
            [enc setBuffer:b_.buffer() offset:0 atIndex:metal_ladder::kBufferB];
            [enc setBuffer:c_.buffer() offset:0 atIndex:metal_ladder::kBufferC];
            // 48 bytes, well under setBytes' 4 KB limit (docs/architecture.md: Dispatch and
            // timing).
            [enc setBytes:&params_ length:sizeof(GemmParams) atIndex:metal_ladder::kBufferParams];
            for (const auto& [index, bytes] : geometry_.threadgroup_memory)
                [enc setThreadgroupMemoryLength:bytes atIndex:NSUInteger(index)];
            [enc dispatchThreadgroups:mtl_size(geometry_.threadgroups)
                threadsPerThreadgroup:mtl_size(geometry_.threads_per_threadgroup)];
            [enc endEncoding];
        });
    }

    void finish() override { c_.copy_back(C_); }

private:
    MetalContext& ctx_;
    std::string label_;           // for error messages
    float* C_;
    id<MTLComputePipelineState> pipeline_ = nil;
    LaunchGeometry geometry_;
    GemmParams params_;
    DeviceMatrix a_, b_, c_;
};

class LadderKernelImpl final : public Kernel {
public:
    LadderKernelImpl(KernelInfo info, const LadderKernel& k) : Kernel(std::move(info)), k_(k) {}

protected:
    std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B,
                                        float* C) const override {
        return std::make_unique<LadderLaunch>(MetalContext::require(), k_, p, A, B, C);
    }

private:
    const LadderKernel& k_;
};

}  // namespace

std::unique_ptr<Kernel> make_ladder_kernel(const LadderKernel& k, const DeviceCaps* caps) {
    KernelInfo info = k.info;
    info.backend = "metal";
    info.flags = k.msl == metal_ladder::MslVersion::metal4_0 ? "MSL 4.0, safe math"
                                                             : "MSL 3.x, safe math";
    // kernel="auto" times only kernels this GPU can run and that compute in full FP32.
    info.auto_candidate = caps && device_unsupported_reason(k, *caps).empty() &&
                          info.precision == Precision::fp32;
    return std::make_unique<LadderKernelImpl>(std::move(info), k);
}

}  // namespace fastgemm::metal_host
