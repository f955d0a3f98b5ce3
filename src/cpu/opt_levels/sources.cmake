# The optimisation-level ladder (src/cpu/opt_levels), added to the fastgemm target.
# Included from src/cpu/CMakeLists.txt:  include(${CMAKE_CURRENT_SOURCE_DIR}/opt_levels/sources.cmake)
#
# One translation unit per level, each with its own COMPILE_OPTIONS. Per-source options
# come after CMAKE_CXX_FLAGS_<CONFIG> on the command line, so this file's -O wins over the
# build type's. TARGET_DIRECTORY fastgemm: the target lives in the top-level directory,
# and source properties set from here would otherwise never reach it (level_loops.inc
# checks __OPTIMIZE__ / __FAST_MATH__ and fails the build if they did not).
set(_fastgemm_ol_dir ${CMAKE_CURRENT_LIST_DIR})
target_sources(fastgemm PRIVATE
  ${_fastgemm_ol_dir}/opt_level_kernels.cpp
  ${_fastgemm_ol_dir}/level_O0.cpp
  ${_fastgemm_ol_dir}/level_O1.cpp
  ${_fastgemm_ol_dir}/level_O2.cpp
  ${_fastgemm_ol_dir}/level_O3.cpp
  ${_fastgemm_ol_dir}/level_O3fm.cpp)

if(DEFINED _isa)
  set(_fastgemm_ol_isa "${_isa}")
else()
  set(_fastgemm_ol_isa "${CMAKE_SYSTEM_PROCESSOR} baseline")
endif()

if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  foreach(_level O0 O1 O2 O3 O3fm)
    if(_level STREQUAL "O3fm")
      set(_opts "-O3;-ffast-math")
      set(_shown "-O3 -ffast-math")
    else()
      set(_opts "-${_level}")
      set(_shown "-${_level}")
    endif()
    set(_fm ", no -ffast-math")
    if(_level STREQUAL "O3fm")
      set(_fm "")
    endif()
    set_source_files_properties(${_fastgemm_ol_dir}/level_${_level}.cpp TARGET_DIRECTORY fastgemm
      PROPERTIES COMPILE_OPTIONS "${_opts}"
                 COMPILE_DEFINITIONS "FASTGEMM_OPT_LEVEL_FLAGS=\"${_shown} -std=c++17, ${_fastgemm_ol_isa}${_fm}\"")
  endforeach()
else()
  # Other compilers spell the levels differently: the files build at the target's
  # flags and say so; the ladder then measures nothing about optimisation levels.
  message(WARNING "fastgemm: the -O ladder (src/cpu/opt_levels) needs GCC or Clang; "
                  "its kernels are built with the default flags")
  foreach(_level O0 O1 O2 O3 O3fm)
    set_source_files_properties(${_fastgemm_ol_dir}/level_${_level}.cpp TARGET_DIRECTORY fastgemm
      PROPERTIES COMPILE_DEFINITIONS "FASTGEMM_OPT_LEVEL_UNCHECKED=1;FASTGEMM_OPT_LEVEL_FLAGS=\"default flags (not ${_level}: compiler not GCC/Clang)\"")
  endforeach()
endif()
