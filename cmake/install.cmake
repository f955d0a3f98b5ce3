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
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/core/ DESTINATION ${FASTGEMM_INSTALL_INCLUDEDIR}/core
  FILES_MATCHING PATTERN "*.hpp")
if(EXISTS ${PROJECT_SOURCE_DIR}/src/fastgemm)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/fastgemm/ DESTINATION ${FASTGEMM_INSTALL_INCLUDEDIR}/fastgemm
    FILES_MATCHING PATTERN "*.hpp")
endif()
install(EXPORT fastgemmTargets NAMESPACE fastgemm:: DESTINATION ${FASTGEMM_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fastgemmConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fastgemmConfig.cmake INSTALL_DESTINATION ${FASTGEMM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fastgemmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fastgemmConfig.cmake ${PROJECT_BINARY_DIR}/fastgemmConfigVersion.cmake
  DESTINATION ${FASTGEMM_INSTALL_CMAKEDIR})
