// Everything the shims need from the C++ standard library, included before the MSL
// keyword macros (device, thread, constant, threadgroup, kernel) become active: after
// <metal_stdlib> no standard header may be included.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "fgemu/runtime.hpp"

#ifndef __METAL_VERSION__
#define __METAL_VERSION__ 400  // the emulator accepts Metal 4.0 sources (MPP tensor ops)
#endif
#define __METAL_EMU__ 1
#define __HAVE_SIMDGROUP_MATRIX__ 1
