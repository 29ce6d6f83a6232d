// Test backend: parascan::cuda on the default stream. Buffers hold a host mirror and device memory;
// tests fill the mirror, upload, run, download and compare. Without a CUDA device every test of the
// executable is skipped (main in main_cuda.cpp prints "skipped: no CUDA device" and exits 77).
#pragma once

#include <cuda/std/complex>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <vector>

#include <parascan/cuda.cuh>
#include <parascan/parascan.hpp>

namespace ptest {

inline const char* backend_name = "cuda";
inline constexpr bool on_gpu = true;
inline parascan::cuda exec() { return parascan::cuda{}; }

using bf16 = __nv_bfloat16;
using f16 = __half;
using complex64 = cuda::std::complex<float>;

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) FAIL(what << ": " << cudaGetErrorString(e));
}

template <class T>
struct buffer {
  std::vector<T> host;
  T* device = nullptr;
  explicit buffer(std::size_t n = 0) : host(n) { allocate(); }
  buffer(std::size_t n, const T& value) : host(n, value) { allocate(); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { cudaFree(device); }
  T* data() { return device; }
  std::size_t size() const { return host.size(); }
  void upload() { check_cuda(cudaMemcpy(device, host.data(), bytes(), cudaMemcpyHostToDevice), "upload"); }
  void download() {
    check_cuda(cudaDeviceSynchronize(), "kernel");
    check_cuda(cudaMemcpy(host.data(), device, bytes(), cudaMemcpyDeviceToHost), "download");
  }

 private:
  std::size_t bytes() const { return host.size() * sizeof(T); }
  void allocate() {
    // One spare element so that even empty buffers have a distinct non-null address.
    check_cuda(cudaMalloc(&device, bytes() + sizeof(T)), "cudaMalloc");
  }
};

}  // namespace ptest
