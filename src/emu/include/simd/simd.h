// metal-emu shim of Apple's <simd/simd.h> as a Metal shader sees it: the simd_* vector
// typedefs and namespace simd over the MSL vector types. Not Apple's header.
#pragma once
#include <metal_stdlib>

#define FG_SIMD_TYPES(T)                                                                        \
    typedef metal::T##2 simd_##T##2; typedef metal::T##3 simd_##T##3; typedef metal::T##4 simd_##T##4;
FG_SIMD_TYPES(float)
FG_SIMD_TYPES(half)
FG_SIMD_TYPES(int)
FG_SIMD_TYPES(uint)
FG_SIMD_TYPES(short)
FG_SIMD_TYPES(ushort)
FG_SIMD_TYPES(char)
FG_SIMD_TYPES(uchar)
#undef FG_SIMD_TYPES
typedef metal::float4x4 simd_float4x4;
typedef metal::float3x3 simd_float3x3;
typedef metal::float2x2 simd_float2x2;

namespace simd {
using metal::float2; using metal::float3; using metal::float4;
using metal::half2; using metal::half3; using metal::half4;
using metal::int2; using metal::int3; using metal::int4;
using metal::uint2; using metal::uint3; using metal::uint4;
using metal::float2x2; using metal::float3x3; using metal::float4x4;
}  // namespace simd
