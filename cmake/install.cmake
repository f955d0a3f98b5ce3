# Installs the core as a CMake package: headers, libfastgemm and fastgemmConfig.cmake,
# into site-packages/fastgemm/ for a wheel or the usual prefix layout otherwise, so
# find_package(fastgemm CONFIG REQUIRED) works after `pip install .` and after
# `cmake --install`.
include(CMakePackageConfigHelpers)

# libfastgemm finds scipy-openblas32's library beside it in site-packages.
if(SKBUILD AND FASTGEMM_BLAS_RESOLVED STREQUAL "scipy-openblas")
  if(APPLE)
    set_target_properties(fastgemm PROPERTIES INSTALL_RPATH "@loader_path/../../scipy_openblas32/lib")
  else()
    set_target_properties(fastgemm PROPERTIES INSTALL_RPATH "$ORIGIN/../../scipy_openblas32/lib")
  endif()
elseif(FASTGEMM_BLAS_RESOLVED STREQUAL "scipy-openblas")
  set_target_properties(fastgemm PROPERTIES INSTALL_RPATH "${FASTGEMM_SCIPY_OPENBLAS_LIBDIR}")
endif()

install(TARGETS fastgemm EXPORT fastgemmTargets
  LIBRARY DESTINATION ${FASTGEMM_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${FASTGEMM_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${FASTGEMM_INSTALL_LIBDIR})
# The public C++ API: fastgemm/fastgemm.hpp and exactly the headers it includes, directly
# or through each other (the example in examples/cpp builds against this set in CI). The
# registry, the interrupt machinery, the benchmark orchestration and the backends stay
# private to the library.
set(FASTGEMM_PUBLIC_HEADERS
  fastgemm/fastgemm.hpp fastgemm/context.hpp fastgemm/timings.hpp fastgemm/trans.hpp
  core/backend.hpp core/build_info.hpp core/errors.hpp core/kernel.hpp core/kernel_info.hpp
  core/problem.hpp core/runner.hpp core/selection.hpp core/threads.hpp)
foreach(_header IN LISTS FASTGEMM_PUBLIC_HEADERS)
  get_filename_component(_dir ${_header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/src/${_header} DESTINATION ${FASTGEMM_INSTALL_INCLUDEDIR}/${_dir})
endforeach()
install(EXPORT fastgemmTargets NAMESPACE fastgemm:: DESTINATION ${FASTGEMM_INSTALL_CMAKEDIR})

# What fastgemmConfig.cmake needs to know about this build. libfastgemm links its BLAS
# privately, but CMake still names that target in the export (so a consumer's linker
# can find libfastgemm's own dependencies); the config looks it up where this build
# took it from: beside fastgemm in site-packages for a wheel, the absolute directory
# for a plain build that used the scipy-openblas32 of the configuring Python.
set(FASTGEMM_CONFIG_BLAS "${FASTGEMM_BLAS_RESOLVED}")
if(SKBUILD)
  set(FASTGEMM_CONFIG_OPENBLAS_HINT "\${PACKAGE_PREFIX_DIR}/scipy_openblas32/lib/cmake/openblas")
else()
  set(FASTGEMM_CONFIG_OPENBLAS_HINT "${FASTGEMM_SCIPY_OPENBLAS_LIBDIR}/cmake/openblas")
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fastgemmConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fastgemmConfig.cmake INSTALL_DESTINATION ${FASTGEMM_INSTALL_CMAKEDIR}
  PATH_VARS FASTGEMM_INSTALL_INCLUDEDIR FASTGEMM_INSTALL_LIBDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fastgemmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fastgemmConfig.cmake ${PROJECT_BINARY_DIR}/fastgemmConfigVersion.cmake
  DESTINATION ${FASTGEMM_INSTALL_CMAKEDIR})
