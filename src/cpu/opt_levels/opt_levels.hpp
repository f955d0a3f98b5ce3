// The optimisation-level ladder (seed 003, "Where the vectorizer switches on" and
// "Chasing the zero"): the same ikj, ijk, transposed-B and split-4 loops compiled at
// -O0, -O1, -O2, -O3 and -O3 -ffast-math inside one library, one translation unit per
// level, registered as kernels named <loop>@<level> (ikj@O0 ... ikj@O3fm).
//
// They are experiments, not rungs: names with '@' are left out of the default
// `fastgemm bench` list and run when named (`--kernels ikj@O0,ikj@O2`).
#pragma once

#include "core/problem.hpp"

namespace fastgemm {
class Registry;
}

namespace fastgemm::cpu {

namespace opt_levels {

using LoopFn = void (*)(const Problem& p, const float* A, const float* B, float* C);
// op(B) -> BT (N x K, rows contiguous).
using TransposeFn = void (*)(const Problem& p, const float* B, float* BT);
// C = alpha * op(A) BT^T (+ beta C) from the transposed copy.
using DotRowsFn = void (*)(const Problem& p, const float* A, const float* BT, float* C);

// One optimisation level's compiled loops. Each level_<X>() is defined in its own
// translation unit (level_O0.cpp ...), built with that level's flags only.
struct LevelLoops {
    const char* level;  // "O0", "O1", "O2", "O3", "O3fm"
    const char* flags;  // the flags that file was compiled with, as CMake passed them
    int opt_level;      // 0..3
    bool fast_math;
    LoopFn ikj;
    LoopFn ijk;
    TransposeFn transpose_b;
    DotRowsFn dot_rows;
    DotRowsFn dot_rows_split4;
};

LevelLoops level_O0();
LevelLoops level_O1();
LevelLoops level_O2();
LevelLoops level_O3();
LevelLoops level_O3fm();

}  // namespace opt_levels

// Registers the 20 kernels (4 loops x 5 levels) into the cpu backend; ladder steps 40..59.
void register_opt_level_ladder(Registry& r);

}  // namespace fastgemm::cpu
