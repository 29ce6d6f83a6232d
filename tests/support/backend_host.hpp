// Test backend: parascan::host. Buffers are host vectors; upload/download do nothing.
#pragma once

#include <Eigen/Core>
#include <complex>
#include <vector>

#include <parascan/parascan.hpp>

namespace ptest {

inline const char* backend_name = "host";
inline constexpr bool on_gpu = false;
inline parascan::host exec() { return parascan::host{}; }

using bf16 = Eigen::bfloat16;
using f16 = Eigen::half;
using complex64 = std::complex<float>;

/// Host mirror plus the memory the backend reads and writes (the same memory here).
template <class T>
struct buffer {
  std::vector<T> host;
  explicit buffer(std::size_t n = 0) : host(n) {}
  buffer(std::size_t n, const T& value) : host(n, value) {}
  T* data() { return host.data(); }
  std::size_t size() const { return host.size(); }
  void upload() {}
  void download() {}
};

}  // namespace ptest
