# INLAY_CUDA: AUTO builds the CUDA backend when the toolkit is found, ON requires it,
# OFF skips it. The CUDA backend itself arrives with its own issue; until then this
# only detects the toolkit so that the option and the build layout are in place.
set(INLAY_HAVE_CUDA OFF)
if(NOT INLAY_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(INLAY_HAVE_CUDA ON)
    message(STATUS "inlay: CUDA toolkit ${CUDAToolkit_VERSION} found at ${CUDAToolkit_BIN_DIR}")
  elseif(INLAY_CUDA STREQUAL "ON")
    message(FATAL_ERROR "INLAY_CUDA=ON but the CUDA toolkit was not found")
  else()
    message(STATUS "inlay: CUDA toolkit not found; building the CPU backend only")
  endif()
endif()
