# The library must link the shared C++ runtime. Where GCC finds only libstdc++.a (an
# image that ships libstdc++.so.6 but not the libstdc++.so development link), the
# driver links the static archive silently, and libfastgemm.so then carries and exports
# its own copy of iostreams and locales. In a process that has already loaded
# libstdc++.so.6 (NumPy, PyTorch, pytest plugins do), calls resolve half to one copy and
# half to the other, and the first stream insertion crashes. Refuse that build here,
# with the fix, instead of shipping a library that crashes depending on import order.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT FASTGEMM_SANITIZE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
                  OUTPUT_VARIABLE _fastgemm_libstdcxx OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${_fastgemm_libstdcxx}")
    message(FATAL_ERROR
      "${CMAKE_CXX_COMPILER} finds no shared libstdc++.so (only the static archive), and a "
      "libfastgemm.so linked with it crashes in processes that load libstdc++.so.6 too. "
      "Install the compiler's development package (libstdc++-dev), or point the linker at a "
      "directory holding a libstdc++.so link to libstdc++.so.6: "
      "LDFLAGS=-L<that directory> pip install .")
  endif()
endif()
