// Accumulator types: the type a scan state is kept in for a given storage type.
//
// 16-bit floats are storage formats only: summing or multiplying in them loses a bit per step, so every
// built-in operator lifts bf16/fp16 elements into an fp32 state and rounds once, when the output is
// written. Every other type (float, double, complex numbers, user types) accumulates in itself.
//
//   accumulator_t<Eigen::bfloat16> == float      accumulator_t<__nv_bfloat16> == float (nvcc only)
//   accumulator_t<Eigen::half>     == float      accumulator_t<__half>        == float (nvcc only)
//   accumulator_t<double> == double, accumulator_t<std::complex<float>> == std::complex<float>, ...
//
// Specialise parascan::ops::accumulator<T> for another storage type.
#pragma once

#include <cmath>
#include <type_traits>
#include <utility>

#include <parascan/config.hpp>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// Declared, not defined, so that the trait does not pull Eigen into operators that do not need it.
namespace Eigen {
struct bfloat16;
struct half;
}  // namespace Eigen

namespace parascan::ops {

template <class T>
struct accumulator {
  using type = T;
};
template <>
struct accumulator<Eigen::bfloat16> {
  using type = float;
};
template <>
struct accumulator<Eigen::half> {
  using type = float;
};
#if defined(__CUDACC__)
template <>
struct accumulator<__nv_bfloat16> {
  using type = float;
};
template <>
struct accumulator<__half> {
  using type = float;
};
#endif

/// The accumulator of storage type T (const ignored).
template <class T>
using accumulator_t = typename accumulator<std::remove_cv_t<T>>::type;

/// The accumulator several storage types meet in: the type of their accumulators' product
/// (float and double -> double; float and complex<float> -> complex<float>).
template <class T, class... R>
struct common_accumulator {
  using type = std::decay_t<decltype(std::declval<accumulator_t<T>>() *
                                     std::declval<typename common_accumulator<R...>::type>())>;
};
template <class T>
struct common_accumulator<T> {
  using type = accumulator_t<T>;
};
template <class... T>
using common_accumulator_t = typename common_accumulator<T...>::type;

namespace detail {
template <class T, class = void>
struct is_complex : std::false_type {};
template <class T>
struct is_complex<T, std::void_t<decltype(std::declval<const T&>().real()), decltype(std::declval<const T&>().imag())>>
    : std::true_type {};
}  // namespace detail

/// x * y in an accumulator type. Complex products use the textbook formula (fused multiply-adds),
/// without the C99 Annex G recovery of inf * 0 that std::complex and cuda::std::complex multiply with (a
/// NaN test and a branch per product, and no fusing, which made complex64 scans compute-bound): scans
/// multiply finite gates and states, and a NaN still propagates.
template <class T>
PARASCAN_HD PARASCAN_INLINE T multiply(const T& x, const T& y) {
  if constexpr (detail::is_complex<T>::value) {
    return T(x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real());
  } else {
    return x * y;
  }
}

/// The complex conjugate of a complex accumulator; a real one itself.
template <class T>
PARASCAN_HD PARASCAN_INLINE T conjugate(const T& x) {
  if constexpr (detail::is_complex<T>::value) {
    return T(x.real(), -x.imag());
  } else {
    return x;
  }
}

/// No inf or NaN in x: both parts of a complex number; a floating-point number by std::isfinite, a 2-byte
/// one (bf16, fp16) through float; integers count as finite. Host code: the operators' finite() hooks
/// (operator_traits.hpp).
template <class T>
inline bool finite_value(const T& x) {
  if constexpr (detail::is_complex<T>::value) {
    return finite_value(x.real()) && finite_value(x.imag());
  } else if constexpr (std::is_floating_point<T>::value) {
    return std::isfinite(x);
  } else if constexpr (!std::is_integral<T>::value && std::is_convertible<T, float>::value) {
    return std::isfinite(static_cast<float>(x));
  } else {
    return true;
  }
}

/// Converts a stored element to accumulator type Acc through its own accumulator (bf16 -> float ->
/// complex<float>, a path a single cast does not always have).
template <class Acc, class T>
PARASCAN_HD PARASCAN_INLINE Acc to_accumulator(const T& x) {
  return Acc(static_cast<accumulator_t<T>>(x));
}

}  // namespace parascan::ops
