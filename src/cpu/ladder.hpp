// The CPU loop ladder of seed 003, as plain functions over host memory, and the
// kernels that the cpu backend registers around them.
#pragma once

#include "core/problem.hpp"

namespace fastgemm {
class Registry;
}

namespace fastgemm::cpu {

// loop_orders.cpp
void ijk(const Problem& p, const float* A, const float* B, float* C);
void ikj(const Problem& p, const float* A, const float* B, float* C);
void jik(const Problem& p, const float* A, const float* B, float* C);
void jki(const Problem& p, const float* A, const float* B, float* C);
void kij(const Problem& p, const float* A, const float* B, float* C);
void kji(const Problem& p, const float* A, const float* B, float* C);

// tiled_ikj.cpp: ii/kk/jj blocks of BS around the ikj body.
template <int BS>
void tiled_ikj(const Problem& p, const float* A, const float* B, float* C);

// threaded_ikj.cpp: rows split evenly across get_num_threads() pool threads.
void ikj_threads(const Problem& p, const float* A, const float* B, float* C);

// Registration of each family into the cpu backend.
void register_loop_ladder(Registry& r);     // loop_ladder_registry.cpp
void register_transposed_b(Registry& r);    // transposed_b.cpp
void register_blas_baseline(Registry& r);   // blas_baseline.cpp
void register_ozaki_reference(Registry& r);  // ozaki_reference.cpp

}  // namespace fastgemm::cpu
