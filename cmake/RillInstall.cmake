# Installs the Rill library (target rill, defined in src/), its headers and a CMake package, so
# that other projects can do
#   find_package(Rill REQUIRED)
#   target_link_libraries(app PRIVATE Rill::rill)
# Layout under the prefix: lib/librill.a, include/rill/..., lib/cmake/Rill/{RillConfig,
# RillConfigVersion,RillTargets*}.cmake.
if(NOT TARGET rill)
  return()
endif()

include(CMakePackageConfigHelpers)

set(RILL_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Rill" CACHE STRING
    "Where the Rill CMake package files are installed (relative to the prefix)")
mark_as_advanced(RILL_INSTALL_CMAKEDIR)

install(TARGETS rill
  EXPORT RillTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/rill"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

install(EXPORT RillTargets
  NAMESPACE Rill::
  DESTINATION "${RILL_INSTALL_CMAKEDIR}")

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/RillConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/RillConfig.cmake"
  INSTALL_DESTINATION "${RILL_INSTALL_CMAKEDIR}")

write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/RillConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion)

install(FILES
  "${PROJECT_BINARY_DIR}/RillConfig.cmake"
  "${PROJECT_BINARY_DIR}/RillConfigVersion.cmake"
  DESTINATION "${RILL_INSTALL_CMAKEDIR}")
