// The optimisation-level ladder's loops at -O3 -ffast-math: this file's only job is to be
// compiled with those flags (src/cpu/opt_levels/sources.cmake); the bodies are shared.
#define FASTGEMM_OPT_LEVEL O3fm
#define FASTGEMM_OPT_LEVEL_NUMBER 3
#define FASTGEMM_OPT_LEVEL_FAST_MATH 1
#include "cpu/opt_levels/level_loops.inc"
