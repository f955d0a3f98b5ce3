// See tma_map.hpp.
#include "cuda/common/tma_map.hpp"

#include <mutex>
#include <string>

#include <cuda_runtime.h>

#include "core/errors.hpp"

namespace fastgemm {
namespace cuda {

namespace {
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_fn() {
    static EncodeTiled fn = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<EncodeTiled>(p);
    });
    if (!fn) throw KernelError("cuTensorMapEncodeTiled is not available from the CUDA driver");
    return fn;
}
}  // namespace

CUtensorMap make_tma_map_2d(const float* base, int64_t rows, int64_t cols, int64_t ld, uint32_t box_rows,
                            uint32_t box_cols, TmaLayout layout, TmaElement element) {
    CUtensorMap map;
    const cuuint64_t dims[2] = {cuuint64_t(cols < 1 ? 1 : cols), cuuint64_t(rows < 1 ? 1 : rows)};
    const cuuint64_t strides[1] = {cuuint64_t(ld < 4 ? 4 : ld) * sizeof(float)};
    const cuuint32_t box[2] = {box_cols, box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    const CUtensorMapSwizzle swizzle =
        layout == TmaLayout::swizzle128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
    const CUtensorMapDataType type =
        element == TmaElement::tf32 ? CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const CUresult r = encode_fn()(&map, type, 2, const_cast<float*>(base), dims,
                                   strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw KernelError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ") for a " +
                          std::to_string(rows) + "x" + std::to_string(cols) + " operand, ld " +
                          std::to_string(ld));
    return map;
}

}  // namespace cuda
}  // namespace fastgemm
