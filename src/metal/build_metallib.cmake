# Builds one metallib from Metal shader files (run by src/metal/CMakeLists.txt as `cmake -P`).
#
#   XCRUN, STD (e.g. metal3.2), EXTRA_FLAGS (list), INCLUDE_DIR, SHADERS (list), WORK_DIR,
#   OUTPUT, STRICT (ON: any failure stops the build)
#
# Each shader becomes an .air with `xcrun -sdk macosx metal -std=STD -fno-fast-math -c`, then
# `xcrun -sdk macosx metallib` links those that compiled. A shader that fails is a warning
# with the compiler's text: its kernels fall back to run-time compilation, which reports the
# same error when they are used. -fno-fast-math keeps FP32 semantics (the `metal` default is
# fast math; docs/architecture.md: Compiling shaders).
cmake_minimum_required(VERSION 3.21)

foreach(_v XCRUN STD INCLUDE_DIR SHADERS WORK_DIR OUTPUT)
  if(NOT DEFINED ${_v} OR "${${_v}}" STREQUAL "")
    message(FATAL_ERROR "build_metallib.cmake: ${_v} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(_airs "")
set(_failed "")
foreach(_shader IN LISTS SHADERS)
  get_filename_component(_stem ${_shader} NAME_WE)
  set(_air ${WORK_DIR}/${_stem}.air)
  execute_process(
    COMMAND ${XCRUN} -sdk macosx metal -std=${STD} ${EXTRA_FLAGS} -fno-fast-math
            -I ${INCLUDE_DIR} -c ${_shader} -o ${_air}
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(_rc EQUAL 0 AND EXISTS ${_air})
    list(APPEND _airs ${_air})
  else()
    list(APPEND _failed ${_stem})
    message(WARNING "fastgemm: ${_stem}.metal did not compile offline (-std=${STD}):\n${_out}${_err}")
  endif()
endforeach()

if(_failed AND STRICT)
  message(FATAL_ERROR "fastgemm: Metal shaders failed to compile: ${_failed}")
endif()
file(REMOVE ${OUTPUT})
if(NOT _airs)
  message(WARNING "fastgemm: no shader compiled offline; ${OUTPUT} is not built and every kernel "
                  "of it is compiled at run time")
  return()
endif()
execute_process(
  COMMAND ${XCRUN} -sdk macosx metallib ${_airs} -o ${OUTPUT}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  file(REMOVE ${OUTPUT})
  if(STRICT)
    message(FATAL_ERROR "fastgemm: metallib failed:\n${_out}${_err}")
  endif()
  message(WARNING "fastgemm: metallib failed, shaders will be compiled at run time:\n${_out}${_err}")
endif()
