// Emulator-only alignment check for vector accesses. MSL requires a pointer to be aligned to
// its pointee type (a device float4 access to a 16-byte boundary); on the CPU a misaligned
// access simply works, so without this check a shader could pass every emulator test and
// then read wrong data on an Apple GPU. Shaders call it under `#if defined(__METAL_EMU__)`
// only; Apple's compiler never sees it. Plain C++: included after <metal_stdlib>, so it must
// not include standard headers (runtime.hpp has already brought in <cstdint> and <string>).
#pragma once

#include "fgemu/runtime.hpp"

namespace fgemu {

// Fails the dispatch (naming the call site) unless `p` is a multiple of `alignment` bytes.
inline void check_aligned(const void* p, unsigned long alignment, const char* what,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    const unsigned long off = static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(p) %
                                                         alignment);
    if (off != 0)
        fail(std::string(file) + ":" + std::to_string(line) + ": misaligned " + what + " (" +
             std::to_string(off) + " bytes past a " + std::to_string(alignment) +
             "-byte boundary); MSL requires pointee alignment");
}

}  // namespace fgemu
