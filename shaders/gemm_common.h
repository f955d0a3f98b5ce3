// Shared by every shader of the Metal ladder: the params struct (always at buffer 3) and the
// element accessors that give every kernel leading dimensions, transposes and alpha/beta.
//
// Layout contract: struct GemmParams here and fastgemm::metal_ladder::GemmParams in
// src/metal/ladder.hpp are the same 48 bytes (uint is 32-bit in MSL).
#pragma once

#include <metal_stdlib>
using namespace metal;

#define GEMM_BUFFER_A 0
#define GEMM_BUFFER_B 1
#define GEMM_BUFFER_C 2
#define GEMM_BUFFER_PARAMS 3

struct GemmParams {
    uint M, N, K;
    uint lda, ldb, ldc;  // row strides of the stored A, B, C in elements
    uint trans_a, trans_b;
    float alpha, beta;   // beta == 0 never reads C, so a NaN-poisoned C is overwritten
    uint reserved0, reserved1;
};

// op(A)(i, k): A is M x K as stored, or K x M when trans_a.
inline float gemm_a(device const float* A, constant GemmParams& p, uint i, uint k) {
    return p.trans_a ? A[k * p.lda + i] : A[i * p.lda + k];
}
// op(B)(k, j): B is K x N as stored, or N x K when trans_b.
inline float gemm_b(device const float* B, constant GemmParams& p, uint k, uint j) {
    return p.trans_b ? B[j * p.ldb + k] : B[k * p.ldb + j];
}
// Bounds-checked forms for edge tiles: zero outside op(A) / op(B).
inline float gemm_a_or0(device const float* A, constant GemmParams& p, uint i, uint k) {
    return (i < p.M && k < p.K) ? gemm_a(A, p, i, k) : 0.0f;
}
inline float gemm_b_or0(device const float* B, constant GemmParams& p, uint k, uint j) {
    return (k < p.K && j < p.N) ? gemm_b(B, p, k, j) : 0.0f;
}
// Epilogue: C(i, j) = alpha * acc + beta * C(i, j).
inline void gemm_store(device float* C, constant GemmParams& p, uint i, uint j, float acc) {
    device float* c = C + i * p.ldc + j;
    *c = (p.beta == 0.0f) ? p.alpha * acc : p.alpha * acc + p.beta * *c;
}
inline void gemm_store_checked(device float* C, constant GemmParams& p, uint i, uint j, float acc) {
    if (i < p.M && j < p.N) gemm_store(C, p, i, j, acc);
}
