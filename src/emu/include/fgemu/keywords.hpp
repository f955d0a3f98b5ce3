// MSL address-space and function qualifiers, and Metal's assert and METAL_FUNC, as C++
// macros. The scanner (msl_scan.py) has already rewritten the context-dependent uses: a
// `threadgroup` variable declaration becomes _FG_TG_VAR_ (one copy per threadgroup: all
// fibers of a group run on one OS thread), a program-scope `constant` becomes _FG_CST_, a
// function constant _FG_FC__, and a constant computed from function constants _FG_FCD_
// (re-evaluated at every dispatch). `constant` next to `const`, and address spaces after a
// member function's parameter list, are erased by the scanner.
#pragma once

#define kernel
#define vertex
#define fragment
#define device
#define constant const  // the constant address space is read-only
#define thread
#define threadgroup
#define threadgroup_imageblock
#define ray_data
#define object_data
#define restrict __restrict
// Coherence qualifiers: one OS thread runs a whole threadgroup and device atomics are real
// atomics, so volatile and coherent(...) add nothing here.
#define volatile
#define coherent
#define METAL_FUNC inline
#define METAL_INTERNAL
#define METAL_ASM
#define _FG_TG_VAR_ static thread_local
#define _FG_CST_ static const
#define _FG_FC__ static
#define _FG_FCD_ static

// Metal's assert is compiled out unless the shader is built with assertions enabled
// (FGEMU_ENABLE_ASSERTS here, as MTLCompileOptions.enableLogging/-fmetal-enable-asserts there).
#undef assert
#if defined(FGEMU_ENABLE_ASSERTS)
#define assert(e) ((e) ? (void)0 : ::fgemu::fail(std::string("assertion failed: ") + #e + " at " + __FILE__ + ":" + std::to_string(__LINE__)))
#else
#define assert(e) ((void)0)
#endif
