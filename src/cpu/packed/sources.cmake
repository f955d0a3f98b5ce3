# Packed SGEMM (src/cpu/packed) and the FMA peak probe, added to the fastgemm target.
# Included from src/cpu/CMakeLists.txt:  include(${CMAKE_CURRENT_SOURCE_DIR}/packed/sources.cmake)
#
# Each ISA-specific micro-kernel is its own translation unit with its own flags, so
# one build carries them all and cpu_isa.cpp picks at run time. Nothing is built with
# -march=native. Those files use only intrinsics and internal-linkage functions, so
# no inline function compiled with wide-ISA flags can be shared with baseline code.
set(_fastgemm_packed_dir ${CMAKE_CURRENT_LIST_DIR})
target_sources(fastgemm PRIVATE
  ${_fastgemm_packed_dir}/cpu_isa.cpp
  ${_fastgemm_packed_dir}/blocking.cpp
  ${_fastgemm_packed_dir}/pack.cpp
  ${_fastgemm_packed_dir}/sgemm_packed.cpp
  ${_fastgemm_packed_dir}/micro_kernel_portable.cpp
  ${_fastgemm_packed_dir}/micro_kernel_avx2.cpp
  ${_fastgemm_packed_dir}/micro_kernel_avx512.cpp
  ${_fastgemm_packed_dir}/micro_kernel_neon.cpp
  ${_fastgemm_packed_dir}/packed_kernels.cpp
  ${_fastgemm_packed_dir}/../peak_probe.cpp
  ${_fastgemm_packed_dir}/../direct/direct_gemm.cpp
  ${_fastgemm_packed_dir}/../direct/direct_kernels.cpp
  ${_fastgemm_packed_dir}/../direct/direct_portable.cpp
  ${_fastgemm_packed_dir}/../direct/direct_avx2.cpp
  ${_fastgemm_packed_dir}/../direct/direct_avx512.cpp)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|i.86)$"
   AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  # TARGET_DIRECTORY: the target lives in the top-level directory, and source file
  # properties set here would otherwise not be seen by it.
  set_source_files_properties(${_fastgemm_packed_dir}/micro_kernel_avx2.cpp
    ${_fastgemm_packed_dir}/../direct/direct_avx2.cpp
    TARGET_DIRECTORY fastgemm PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma")
  set_source_files_properties(${_fastgemm_packed_dir}/micro_kernel_avx512.cpp
    ${_fastgemm_packed_dir}/../direct/direct_avx512.cpp
    TARGET_DIRECTORY fastgemm PROPERTIES COMPILE_OPTIONS "-mavx512f")
endif()

# Python-side queries (fastgemm._fastgemm.cpu_isa_name, measure_fma_peak_gflops, ...):
# src/bindings/backend_extras.cpp calls bind_cpu_packed when FASTGEMM_WITH_CPU_PACKED.
set_property(GLOBAL APPEND PROPERTY FASTGEMM_BINDING_SOURCES
  ${_fastgemm_packed_dir}/../../bindings/cpu_packed.cpp)
set_property(GLOBAL APPEND PROPERTY FASTGEMM_BACKENDS_BUILT CPU_PACKED)
