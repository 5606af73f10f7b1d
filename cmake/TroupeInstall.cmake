# `cmake --install build --prefix P`: the libraries, their public headers (include/<folder>/...,
# the layout the sources include them by), the generated headers, the troupe binary and a CMake
# package (lib/cmake/Troupe) whose Troupe::troupe links everything a program with its own
# main() needs (launch/main.h). Tests and benchmarks are not installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TROUPE_INSTALL_TARGETS)
foreach(lib troupe_core troupe_kernels troupe_checkpoint troupe_graph troupe_input
            troupe_input_graph troupe_collectives troupe_actors troupe_train troupe_launch troupe_cli
            troupe_program)
  if(TARGET ${lib})
    list(APPEND TROUPE_INSTALL_TARGETS ${lib})
  endif()
endforeach()
# Installed headers are found under include/ (in the build tree: the source and generated dirs).
target_include_directories(troupe_core PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# Programs compile with the library's x86-64 level: Eigen's vector alignment in shared inline
# code depends on it.
if(TROUPE_ARCH_FLAG AND TARGET troupe_program)
  target_compile_options(troupe_program INTERFACE ${TROUPE_ARCH_FLAG})
endif()
# A sanitized build's libraries need the sanitizer's runtime in the program too.
if(TROUPE_SANITIZE AND TARGET troupe_program)
  target_compile_options(troupe_program INTERFACE -fsanitize=${TROUPE_SANITIZE})
  target_link_options(troupe_program INTERFACE -fsanitize=${TROUPE_SANITIZE})
endif()

install(TARGETS ${TROUPE_INSTALL_TARGETS} EXPORT TroupeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET troupe)
  install(TARGETS troupe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# Public headers: every folder's *.h except backend internals (MPI, CUDA kernels, CAF protocol).
foreach(dir ${TROUPE_DIRS})
  if(EXISTS "${PROJECT_SOURCE_DIR}/${dir}/CMakeLists.txt")
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir}
            FILES_MATCHING PATTERN "*.h"
            PATTERN "mpi" EXCLUDE PATTERN "cuda" EXCLUDE PATTERN "proto" EXCLUDE
            PATTERN "*_internal.h" EXCLUDE PATTERN "internal" EXCLUDE PATTERN "protocol.h" EXCLUDE)
  endif()
endforeach()
install(DIRECTORY ${PROJECT_BINARY_DIR}/generated/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

set(TROUPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Troupe)
install(EXPORT TroupeTargets NAMESPACE Troupe:: DESTINATION ${TROUPE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TroupeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TroupeConfig.cmake INSTALL_DESTINATION ${TROUPE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TroupeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TroupeConfig.cmake ${PROJECT_BINARY_DIR}/TroupeConfigVersion.cmake
        ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake DESTINATION ${TROUPE_CMAKE_DIR})
