# Installs the Rill library (target rill, defined in src/), its headers, a CMake package and a
# pkg-config file, so that other projects can do
#   find_package(Rill REQUIRED)
#   target_link_libraries(app PRIVATE Rill::rill)
# or
#   g++ -std=c++20 app.cpp $(pkg-config --cflags --libs rill)
# Layout under the prefix: lib/librill.a, include/rill/..., lib/cmake/Rill/{RillConfig,
# RillConfigVersion,RillTargets*}.cmake, lib/pkgconfig/rill.pc. `cpack -G DEB` in the build tree
# packs the same files as a Debian package that installs under /usr.
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

# pkg-config. librill.a is static, so what it links goes in Requires and Libs, not in their
# .private forms, which `pkg-config --libs` leaves out. Boost.Context and MPI are given as the
# files this build linked: Boost has no .pc file, and Debian's mpi-cxx.pc names whichever MPI the
# alternatives system chose, not necessarily the one of this build (the mpich preset).
set(RILL_PC_REQUIRES "fmt spdlog hwloc hdf5 sqlite3")
set(RILL_PC_LIBS "$<TARGET_LINKER_FILE:Boost::context>")
foreach(lib IN LISTS MPI_CXX_LIBRARIES CMAKE_DL_LIBS)
  if(IS_ABSOLUTE "${lib}")
    string(APPEND RILL_PC_LIBS " ${lib}")
  else()
    string(APPEND RILL_PC_LIBS " -l${lib}")
  endif()
endforeach()
file(RELATIVE_PATH RILL_PC_PREFIX_FROM_PCDIR "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" RILL_PC_PREFIX_FROM_PCDIR "${RILL_PC_PREFIX_FROM_PCDIR}")
configure_file("${PROJECT_SOURCE_DIR}/cmake/rill.pc.in" "${PROJECT_BINARY_DIR}/rill.pc.in" @ONLY)
file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/rill.pc" INPUT "${PROJECT_BINARY_DIR}/rill.pc.in")
install(FILES "${PROJECT_BINARY_DIR}/rill.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# A Debian package of the install above (`cpack -G DEB` in the build tree). Its dependencies are
# Debian's -dev packages of what librill.a links, with the MPI this build used.
if(MPI_CXX_LIBRARIES MATCHES "mpich")
  set(rill_deb_mpi "libmpich-dev")
else()
  set(rill_deb_mpi "libopenmpi-dev")
endif()
set(CPACK_PACKAGE_NAME "librill-dev")
set(CPACK_PACKAGE_VENDOR "Rill")
set(CPACK_PACKAGE_CONTACT "Rill developers <rill@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Rill asynchronous many-task runtime (static library, headers, CMake and pkg-config files)")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "libdevel")
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libboost-context-dev (>= 1.74), ${rill_deb_mpi}, libcereal-dev, libfmt-dev, libspdlog-dev, libhwloc-dev, libhdf5-dev, libsqlite3-dev, pkg-config")
set(CPACK_GENERATOR "DEB")
include(CPack)
