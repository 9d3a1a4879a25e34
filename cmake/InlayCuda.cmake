# INLAY_CUDA: AUTO builds the CUDA kernels (kernels/) when the toolkit is found, ON
# requires it, OFF skips it. The CUDA backend (lib/backend/cuda) arrives with its own
# issue; kernels/ is its device code and builds, with its tests, on any machine with the
# toolkit (no GPU needed to build, or to run the NVRTC and ptxas checks).
#
# Sets INLAY_HAVE_CUDA and, when ON, enables the CUDA language with the toolkit's nvcc
# (CMAKE_CUDA_COMPILER, unless given or set through CUDACXX) and the same host compiler
# as C++. INLAY_CUDA_ARCHS lists the GPU architectures the kernels are compiled for.
set(INLAY_HAVE_CUDA OFF)
set(INLAY_CUDA_ARCHS "80;86;89;90" CACHE STRING
    "GPU architectures of the CUDA kernels (CUDA_ARCHITECTURES syntax, e.g. 80;90)")
if(NOT INLAY_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
      set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
    endif()
    if(NOT CMAKE_CUDA_HOST_COMPILER AND NOT DEFINED ENV{CUDAHOSTCXX})
      set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
    endif()
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "${INLAY_CUDA_ARCHS}")  # skips the detection step
    endif()
    enable_language(CUDA)
    set(INLAY_HAVE_CUDA ON)
    message(STATUS "inlay: CUDA toolkit ${CUDAToolkit_VERSION} found at ${CUDAToolkit_BIN_DIR}; "
                   "kernels for architectures ${INLAY_CUDA_ARCHS}")
  elseif(INLAY_CUDA STREQUAL "ON")
    message(FATAL_ERROR "INLAY_CUDA=ON but the CUDA toolkit was not found")
  else()
    message(STATUS "inlay: CUDA toolkit not found; building the CPU backend only")
  endif()
endif()

# Warnings for nvcc-compiled sources: the host compiler's for the host side of .cu files,
# nvcc's own and ptxas's (spills are warnings); with INLAY_WERROR all of them are errors.
# (inlay_set_warnings is for C/C++ targets: its flags are not nvcc's.)
function(inlay_cuda_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wshadow,-Wunused -Xptxas=--warn-on-spills>)
  if(INLAY_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Werror>)
  endif()
endfunction()
