// Macros that Apple's Metal compiler predefines, as metal-emu models them. Macros only (no
// includes, no declarations): the scanner's preprocessing pass (msl_scan.py) uses this same
// file, so `#if __METAL_VERSION__ >= 310` and friends choose the same code in both passes.
#pragma once

#ifndef __METAL_VERSION__
#define __METAL_VERSION__ 400  // the emulator accepts Metal 4.0 sources (MPP tensor ops)
#endif
#define __METAL__ 1
#define __METAL_MACOS__ 1
#define __METAL_EMU__ 1
#define __HAVE_SIMDGROUP_MATRIX__ 1
#define __HAVE_SIMDGROUP_REDUCTION__ 1
#define __HAVE_QUADGROUP__ 1
#define __HAVE_BFLOAT__ 1
#define __HAVE_ATOMIC_FLOAT__ 1
#define __HAVE_TENSOR__ 1
