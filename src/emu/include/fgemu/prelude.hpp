// Everything the shims need from the C++ standard library, included before the MSL
// keyword macros (device, thread, constant, threadgroup, kernel) become active: after
// <metal_stdlib> no standard header may be included. No <cmath>: see libm.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <atomic>
#include <cfloat>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "fgemu/libm.hpp"
#include "fgemu/predefined.hpp"
#include "fgemu/runtime.hpp"
