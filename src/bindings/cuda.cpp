// Python entry points of the cuda backend for arrays already on the GPU. The generic
// numpy path (fastgemm.sgemm on host arrays) goes through the registry like every
// backend; python/fastgemm/cuda.py turns CuPy / PyTorch / DLPack arrays into the raw
// pointers these functions take.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "cuda/interop.hpp"

namespace py = pybind11;

void bind_cuda(py::module_& m) {
    m.def(
        "cuda_sgemm",
        [](const std::string& kernel, int64_t M, int64_t N, int64_t K, uintptr_t A, int64_t lda, uintptr_t B,
           int64_t ldb, uintptr_t C, int64_t ldc, bool trans_a, bool trans_b, float alpha, float beta,
           uintptr_t stream, int device, const std::string& precision) {
            fastgemm::cuda::DeviceOperands d;
            fastgemm::Problem& p = d.problem;
            p.M = M, p.N = N, p.K = K;
            p.lda = lda, p.ldb = ldb, p.ldc = ldc;
            p.trans_a = trans_a, p.trans_b = trans_b;
            p.alpha = alpha, p.beta = beta;
            d.A = reinterpret_cast<const float*>(A);
            d.B = reinterpret_cast<const float*>(B);
            d.C = reinterpret_cast<float*>(C);
            fastgemm::cuda::DeviceCall call;
            call.kernel = kernel;
            call.accuracy = fastgemm::parse_accuracy(precision);
            call.stream = stream;
            call.device = device;
            py::gil_scoped_release nogil;
            return fastgemm::cuda::run_device_gemm(d, call);
        },
        py::arg("kernel"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("A"), py::arg("lda"), py::arg("B"),
        py::arg("ldb"), py::arg("C"), py::arg("ldc"), py::arg("trans_a"), py::arg("trans_b"), py::arg("alpha"),
        py::arg("beta"), py::arg("stream") = 0, py::arg("device") = -1, py::arg("precision") = "fp32",
        "C = alpha * op(A) op(B) + beta * C on device pointers (row-major, leading dimensions in elements), "
        "queued on `stream` without synchronising. kernel='auto' picks with the core's selection policy "
        "within `precision` (fp32: FP32-accurate, strict: FP32 arithmetic only, tf32: relaxed). Returns the "
        "name of the kernel that ran.");
}
