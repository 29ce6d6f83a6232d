// Runtime-size matrix chains on the GPU (ops/runtime_matrix_chain.hpp through cuBLAS): include this from
// .cu files and link CUDA::cublas (CMake: find_package(CUDAToolkit), target_link_libraries(... CUDA::cublas)).
// Kept apart from <parascan/cuda.cuh> so that code without runtime-size matrices does not need cuBLAS.
#pragma once

#include "cuda.cuh"
#include "cuda/cublas_chain.cuh"
#include "cuda/cublas_chain_backward.cuh"
#include <parascan/ops/runtime_matrix_chain.hpp>
