# Where the CUDA toolkit is: the first of CUDAToolkit_ROOT (variable or
# environment), the folder above an nvcc on PATH, /usr/local/cuda, and the root scripts/cuda-toolkit installs from
# PyPI's CUDA 13.0 wheels (.cache/cuda13/root; docs/cuda.md "Toolchain") that
# has bin/nvcc or include/cuda_runtime.h. Sets VW_CUDA_ROOT (empty when none)
# and, when found and not set by the caller, CUDAToolkit_ROOT for
# find_package(CUDAToolkit). Included by CMakeLists.txt and cuda/CMakeLists.txt
# with VW_ROOT set to the repository root.
set(VW_CUDA_ROOT "")
find_program(VW_NVCC_ON_PATH nvcc NO_CACHE)
set(vw_path_root "")
if(VW_NVCC_ON_PATH)
  get_filename_component(vw_path_root "${VW_NVCC_ON_PATH}" REALPATH)
  get_filename_component(vw_path_root "${vw_path_root}" DIRECTORY)
  get_filename_component(vw_path_root "${vw_path_root}" DIRECTORY)
endif()
foreach(candidate "${CUDAToolkit_ROOT}" "$ENV{CUDAToolkit_ROOT}" "${vw_path_root}" /usr/local/cuda
    "${VW_ROOT}/.cache/cuda13/root")
  if(candidate AND (EXISTS "${candidate}/bin/nvcc" OR EXISTS "${candidate}/include/cuda_runtime.h"))
    get_filename_component(VW_CUDA_ROOT "${candidate}" REALPATH)
    break()
  endif()
endforeach()
if(VW_CUDA_ROOT AND NOT CUDAToolkit_ROOT)
  set(CUDAToolkit_ROOT "${VW_CUDA_ROOT}")
endif()
