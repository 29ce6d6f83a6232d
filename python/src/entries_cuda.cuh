// The GPU side of entries.hpp, for the extension's CUDA files: pyext::gpu becomes parascan::cuda on its
// stream, and views and options of the host element types become views of the device's (the same bytes:
// std::complex<S> and cuda::std::complex<S>, Eigen::bfloat16 and __nv_bfloat16, Eigen::half and __half
// share their layouts).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cuda/std/complex>

#include <parascan/cuda.cuh>

#include "entries.hpp"

namespace pyext {

template <class T>
struct device_type {
  using type = T;
};
template <class T>
struct device_type<const T> {
  using type = const typename device_type<T>::type;
};
template <class S>
struct device_type<std::complex<S>> {
  using type = cuda::std::complex<S>;
};
template <>
struct device_type<Eigen::bfloat16> {
  using type = __nv_bfloat16;
};
template <>
struct device_type<Eigen::half> {
  using type = __half;
};
template <class T>
using device_t = typename device_type<T>::type;
static_assert(sizeof(device_t<Eigen::bfloat16>) == 2 && sizeof(device_t<Eigen::half>) == 2 &&
              sizeof(device_t<std::complex<float>>) == sizeof(std::complex<float>));

inline parascan::cuda backend(const gpu& g) { return {reinterpret_cast<cudaStream_t>(g.stream), nullptr}; }

/// parascan's temporaries of framework_bytes or more from the caller's workspace_source where the call has
/// one, the rest from parascan's own pool (the default temp_allocator), which keeps what it maps up to 256
/// MiB: the large workspaces are what it would map afresh every call, and a small one through the framework
/// costs a Python callback (H200, parascan.torch with every request through PyTorch: 64 x 64 chains of
/// 1024 0.33 against 0.28 ms on the pool, 128 x 128 TF32 0.36 against 0.23 ms).
class workspace_allocator final : public parascan::temp_allocator {
 public:
  static constexpr std::size_t framework_bytes = std::size_t(64) << 20;
  explicit workspace_allocator(workspace_source* source) : source_(source) {}
  void* allocate(std::size_t bytes, cudaStream_t stream) override {
    return from_source(bytes) ? source_->allocate(bytes) : temp_allocator::allocate(bytes, stream);
  }
  void deallocate(void* p, std::size_t bytes, cudaStream_t stream) override {
    if (from_source(bytes))
      source_->release(p);
    else
      temp_allocator::deallocate(p, bytes, stream);
  }

 private:
  bool from_source(std::size_t bytes) const { return source_ != nullptr && bytes >= framework_bytes; }
  workspace_source* source_;
};

/// The CUDA backend on g's stream, its temporaries from g's workspace source.
template <class F>
void with_workspace(const gpu& g, F&& f) {
  workspace_allocator allocator(g.workspace);
  f(parascan::cuda{reinterpret_cast<cudaStream_t>(g.stream), &allocator});
}

template <class T>
sequences<device_t<T>> on_device(const gpu&, const sequences<T>& v) {
  // A reinterpreted view (float32[1:] as complex64) may start off the device type's alignment.
  if (reinterpret_cast<std::uintptr_t>(v.data) % alignof(device_t<T>) != 0)
    parascan::detail::fail("inputs", "arrays whose data are aligned to their elements (" +
                                         std::to_string(alignof(device_t<T>)) + " bytes) on the GPU");
  return {reinterpret_cast<device_t<T>*>(v.data),
          {v.extent[0], v.extent[1]},
          {v.stride[0], v.stride[1]},
          v.length,
          v.time_stride,
          v.offsets};
}
template <class T>
parascan::options<device_t<T>> on_device(const gpu&, const parascan::options<T>& o) {
  parascan::options<device_t<T>> d;
  d.exclusive = o.exclusive, d.reverse = o.reverse;
  d.initial = reinterpret_cast<const device_t<T>*>(o.initial);
  d.final = reinterpret_cast<device_t<T>*>(o.final);
  return d;
}
template <class Y, class GY>
parascan::backward_options<device_t<Y>, device_t<GY>> on_device(const gpu&,
                                                                  const parascan::backward_options<Y, GY>& o) {
  parascan::backward_options<device_t<Y>, device_t<GY>> d;
  d.reverse = o.reverse, d.exclusive = o.exclusive;
  d.initial = reinterpret_cast<const device_t<Y>*>(o.initial);
  d.grad_final = reinterpret_cast<const device_t<GY>*>(o.grad_final);
  d.grad_initial = reinterpret_cast<device_t<GY>*>(o.grad_initial);
  return d;
}

}  // namespace pyext
