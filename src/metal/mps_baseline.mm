// The "mps" baseline of backend "metal": MPSMatrixMultiplication on the same operands.
//
// bind() creates the MPSMatrixDescriptor/MPSMatrix objects and the MPSMatrixMultiplication
// kernel once; run() only encodes it into a fresh command buffer, so iterations time the GPU
// work and one submission, like the ladder kernels (run_command_buffer). MPS computes
// C = alpha * op(A) op(B) + beta * C on row-major matrices with any row stride, so it takes
// every problem the ladder takes (docs/architecture.md: MPS, the source of every MPS call here).
//
// This file needs MetalPerformanceShaders headers, which the Linux type-check SDK lacks:
// scripts/check_objc.sh defines FASTGEMM_SYNTAX_CHECK_NO_MPS and skips it; it was reviewed by
// hand against the MPS facts in docs/architecture.md instead.
#if !defined(FASTGEMM_SYNTAX_CHECK_NO_MPS)

#import <MetalPerformanceShaders/MetalPerformanceShaders.h>

#import "metal/metal_context.h"
#import "metal/metal_kernels.h"

namespace fastgemm::metal_host {

namespace {

// A stored row-major matrix as MPS sees it: rows x cols floats, rowBytes = ld * 4 (E: any
// stride of at least one row that is a multiple of the element size).
MPSMatrix* mps_matrix(id<MTLBuffer> buffer, int64_t rows, int64_t cols, int64_t ld) {
    MPSMatrixDescriptor* d =
        [MPSMatrixDescriptor matrixDescriptorWithRows:NSUInteger(rows)
                                              columns:NSUInteger(cols)
                                             rowBytes:NSUInteger(ld) * sizeof(float)
                                             dataType:MPSDataTypeFloat32];
    return [[MPSMatrix alloc] initWithBuffer:buffer descriptor:d];
}

// MPS may address whole rows (rows * rowBytes), one gap past our span: the buffer covers it.
size_t mps_bytes(int64_t rows, int64_t ld) { return size_t(rows * ld) * sizeof(float); }

class MpsLaunch final : public Launch {
public:
    MpsLaunch(MetalContext& ctx, const Problem& p, const float* A, const float* B, float* C)
        : ctx_(ctx), C_(C) {
        if (!ctx.caps().mps) {
            throw BackendUnavailableError(
                "metal baseline 'mps' is unavailable on this GPU (" + ctx.caps().name +
                "): MPSSupportsMTLDevice() says Metal Performance Shaders does not support it");
        }
        BufferPool& pool = ctx.buffers();
        a_ = DeviceMatrix(pool, A, p.a_rows(), p.a_cols(), p.lda, mps_bytes(p.a_rows(), p.lda), true);
        b_ = DeviceMatrix(pool, B, p.b_rows(), p.b_cols(), p.ldb, mps_bytes(p.b_rows(), p.ldb), true);
        c_ = DeviceMatrix(pool, C, p.M, p.N, p.ldc, mps_bytes(p.M, p.ldc), p.beta != 0.0f);
        // With beta == 0 BLAS never reads C, and fastgemm's verifier poisons it with NaN.
        // Whether MPS skips the read when beta == 0 is not documented (docs/architecture.md:
        // MPS), and 0 * NaN = NaN, so C starts at zero here, once, outside the timed iterations.
        if (p.beta == 0.0f) c_.zero_elements();
        @autoreleasepool {
            left_ = mps_matrix(a_.buffer(), p.a_rows(), p.a_cols(), p.lda);
            right_ = mps_matrix(b_.buffer(), p.b_rows(), p.b_cols(), p.ldb);
            result_ = mps_matrix(c_.buffer(), p.M, p.N, p.ldc);
            // resultRows = M, resultColumns = N, interiorColumns = K after the transposes;
            // alpha and beta are doubles (docs/architecture.md: MPS).
            mm_ = [[MPSMatrixMultiplication alloc] initWithDevice:ctx.device()
                                                    transposeLeft:p.trans_a ? YES : NO
                                                   transposeRight:p.trans_b ? YES : NO
                                                       resultRows:NSUInteger(p.M)
                                                    resultColumns:NSUInteger(p.N)
                                                  interiorColumns:NSUInteger(p.K)
                                                            alpha:double(p.alpha)
                                                             beta:double(p.beta)];
        }
        if (mm_ == nil) throw KernelError("metal baseline 'mps': MPSMatrixMultiplication init failed");
    }

    Timing run() override {
        return run_command_buffer(ctx_, "metal baseline 'mps'", [&](id<MTLCommandBuffer> cb) {
            [mm_ encodeToCommandBuffer:cb leftMatrix:left_ rightMatrix:right_ resultMatrix:result_];
        });
    }

    void finish() override { c_.copy_back(C_); }

private:
    MetalContext& ctx_;
    float* C_;
    DeviceMatrix a_, b_, c_;
    MPSMatrix* left_ = nil;
    MPSMatrix* right_ = nil;
    MPSMatrix* result_ = nil;
    MPSMatrixMultiplication* mm_ = nil;
};

class MpsKernel final : public Kernel {
public:
    using Kernel::Kernel;

protected:
    std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B,
                                        float* C) const override {
        return std::make_unique<MpsLaunch>(MetalContext::require(), p, A, B, C);
    }
};

}  // namespace

void register_mps_baseline(Registry& r, const DeviceCaps* caps) {
    KernelInfo info;
    info.name = "mps";
    info.backend = "metal";
    info.baseline = true;
    info.ladder_step = 0;
    info.precision = Precision::fp32;
    // Empty dimensions are left to the ladder: an MPS kernel with a zero extent is not
    // something Apple documents.
    info.constraints = {Constraint::at_least('M', 1), Constraint::at_least('N', 1),
                        Constraint::at_least('K', 1)};
    info.source = "src/metal/mps_baseline.mm";
    info.description = "MPSMatrixMultiplication (Metal Performance Shaders), objects built once "
                       "per bind, one command buffer per iteration";
    info.auto_candidate = caps && caps->mps;
    r.add_kernel(std::make_unique<MpsKernel>(std::move(info)));
}

}  // namespace fastgemm::metal_host

#endif  // !FASTGEMM_SYNTAX_CHECK_NO_MPS
