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

# The CUDA backend's runtime dependencies, as lib/ and kernels/ link them: the CUDA runtime
# statically (CUDA::cudart_static) and NVRTC as a shared library. cuBLAS is not linked:
# the backend opens it with dlopen when the first CUDA backend is made
# (lib/backend/cuda/cublas_library.h), so that a process on the CPU never maps it. (The
# linker drops NVRTC from DT_NEEDED while the library calls none of it, as today; it stays
# declared, so that the declaration cannot fall behind the link line.) The installed
# library finds it through its RUNPATH (INSTALL_RPATH_USE_LINK_PATH in capi/CMakeLists.txt).
set(INLAY_PC_LIBS_PRIVATE_LINE "")
if(INLAY_HAVE_CUDA)
  get_filename_component(nvrtc_dir "${CUDA_nvrtc_LIBRARY}" DIRECTORY)
  set(INLAY_PC_LIBS_PRIVATE_LINE "Libs.private: -L${nvrtc_dir} -lnvrtc")
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
