# What `cmake --install` puts in place (included by capi/CMakeLists.txt, which defines the
# shared library target `inlay` and INLAY_ABI_VERSION):
#   lib/libinlay.so.<abi>...          the library, SONAME libinlay.so.<abi>
#   include/inlay/inlay.h, inlay.hpp  the public headers
#   lib/cmake/inlay/                  the CMake package: find_package(inlay CONFIG) gives
#                                     the imported target inlay::inlay
#   lib/pkgconfig/inlay.pc            pkg-config's: cc $(pkg-config --cflags --libs inlay)
# Only the shared library is installed: the static core (inlay_static) is linked into it
# privately and appears in neither the CMake package nor inlay.pc.
include(CMakePackageConfigHelpers)

set(INLAY_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/inlay" CACHE STRING
    "Where the CMake package of inlay is installed (relative to the prefix)")
mark_as_advanced(INLAY_INSTALL_CMAKEDIR)

install(TARGETS inlay EXPORT inlayTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/inlay/inlay.h ${PROJECT_SOURCE_DIR}/include/inlay/inlay.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/inlay)
install(EXPORT inlayTargets NAMESPACE inlay:: FILE inlayTargets.cmake DESTINATION ${INLAY_INSTALL_CMAKEDIR})

# The CUDA backend's runtime dependencies: the CUDA runtime is linked in statically
# (CUDA::cudart_static); cuBLAS and NVRTC are not linked: the backend opens them with
# dlopen when it first needs them (lib/backend/cuda/cublas_library.h,
# kernels/cuda/nvrtc_compile.h), so a process on the CPU never maps them and a machine
# with a driver but without them still loads libinlay. What remains for a static link is
# the dynamic loader's library.
set(INLAY_PC_LIBS_PRIVATE_LINE "")
if(INLAY_HAVE_CUDA AND CMAKE_DL_LIBS)
  set(INLAY_PC_LIBS_PRIVATE_LINE "Libs.private:")
  foreach(lib IN LISTS CMAKE_DL_LIBS)
    string(APPEND INLAY_PC_LIBS_PRIVATE_LINE " -l${lib}")
  endforeach()
endif()

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/inlayConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/packaging/inlayConfig.cmake"
  INSTALL_DESTINATION ${INLAY_INSTALL_CMAKEDIR})
# The package version is the release; find_package(inlay X.Y) takes any X.* at least X.Y.
# The ABI major version (the SONAME's number) is inlay_ABI_VERSION.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/packaging/inlayConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES "${PROJECT_BINARY_DIR}/packaging/inlayConfig.cmake"
  "${PROJECT_BINARY_DIR}/packaging/inlayConfigVersion.cmake"
  DESTINATION ${INLAY_INSTALL_CMAKEDIR})

# inlay.pc is relocatable: its prefix is found from the file's own place (${pcfiledir}),
# so `cmake --install --prefix DIR` needs no reconfiguration.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(INLAY_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(INLAY_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(INLAY_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  set(INLAY_PC_PREFIX "\${pcfiledir}/${pc_up}")
  string(REGEX REPLACE "/$" "" INLAY_PC_PREFIX "${INLAY_PC_PREFIX}")
  set(INLAY_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(INLAY_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/inlay.pc.in" "${PROJECT_BINARY_DIR}/packaging/inlay.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/packaging/inlay.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
