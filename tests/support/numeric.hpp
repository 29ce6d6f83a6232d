// Storage-type helpers for operator cases, backend-neutral (ptest::bf16, f16, complex64 come from the
// backend header): machine epsilon per type, stored values to and from fp64 references.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace ptest {

template <class T, class = void>
struct is_complex : std::false_type {};
template <class T>
struct is_complex<T, std::void_t<decltype(std::declval<const T&>().imag())>> : std::true_type {};

/// log(exp(x) + exp(y)) in fp64, written independently of the library's operators (the references of the
/// log-space tests): shift by the max, sum, log; -inf and +inf pass through, NaN stays NaN.
inline double log_add_exp(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return NAN;
  const double m = std::max(x, y);
  if (std::isinf(m)) return m;
  return m + std::log(std::exp(x - m) + std::exp(y - m));
}

/// Machine epsilon (spacing of numbers near 1) of a storage type; a complex type's is its parts'.
template <class T>
double eps_of() {
  if constexpr (std::is_same<T, bf16>::value) return 0x1p-7;
  else if constexpr (std::is_same<T, f16>::value) return 0x1p-10;
  else if constexpr (std::is_same<T, double>::value) return 0x1p-52;
  else if constexpr (is_complex<T>::value) return eps_of<std::decay_t<decltype(std::declval<T>().real())>>();
  else return 0x1p-23;
}

/// A stored real value, exactly, in fp64.
template <class T>
double to_double(const T& x) {
  if constexpr (std::is_same<T, double>::value) return x;
  else return double(static_cast<float>(x));
}

/// A stored value (real or complex), exactly, as complex<double>.
template <class T>
std::complex<double> to_complex(const T& x) {
  if constexpr (is_complex<T>::value) return {double(x.real()), double(x.imag())};
  else return {to_double(x), 0.0};
}

/// The storage value nearest to v (the imaginary part is dropped for real types).
template <class T>
T store(std::complex<double> v) {
  if constexpr (is_complex<T>::value) return T(float(v.real()), float(v.imag()));
  else if constexpr (std::is_same<T, double>::value) return v.real();
  else return T(float(v.real()));
}
template <class T>
T store(double v) {
  return store<T>(std::complex<double>(v, 0.0));
}

/// Keeps in `worst` the larger of it and e; a NaN e (an unwritten output) makes it infinite for good (a
/// plain `if (!(e <= worst)) worst = e` would keep the NaN only until the next finite error replaced it).
inline void keep_worst(double& worst, double e) { worst = std::isnan(e) ? INFINITY : std::max(worst, e); }

/// Worst error |got - ref| / (scale + |ref|) over the elements added; infinities must match exactly
/// and a NaN must appear exactly where the reference has one (else the error is infinite). With scale 1,
/// the measure of log-values: an absolute error near 0, a relative one far from it.
struct scaled_error_meter {
  double scale = 1.0;
  double worst = 0;
  void add(double got, double ref) {
    double e;
    if (std::isnan(ref) || std::isnan(got)) e = std::isnan(ref) == std::isnan(got) ? 0.0 : INFINITY;
    else if (std::isinf(ref) || std::isinf(got)) e = got == ref ? 0.0 : INFINITY;
    else e = std::abs(got - ref) / (scale + std::abs(ref));
    keep_worst(worst, e);
  }
};

/// dL/dv by central differences of step h, for a loss() that reads v (restored afterwards).
template <class Loss>
double central_difference(double& v, Loss&& loss, double h = 1e-6) {
  const double keep = v;
  v = keep + h;
  const double plus = loss();
  v = keep - h;
  const double minus = loss();
  v = keep;
  return (plus - minus) / (2 * h);
}

/// ||got - ref||_2 / ||c||_2 over the elements added, c being the scale given with each (the size of the
/// terms that made it); any non-finite result makes it infinite.
struct scaled_norm_error {
  double diff2 = 0, scale2 = 0;
  bool bad = false;
  void add(std::complex<double> got, std::complex<double> ref, double scale) {
    if (!std::isfinite(got.real()) || !std::isfinite(got.imag())) bad = true;
    diff2 += std::norm(got - ref);
    scale2 += scale * scale;
  }
  double relative() const { return bad ? INFINITY : std::sqrt(diff2 / (scale2 > 0 ? scale2 : 1.0)); }
};

/// A fast generator for bulk inputs (xoshiro256+), seeded from ptest::rng() so that every run draws
/// fresh values: the standard library's engines and normal distribution would dominate the run time of
/// sweeps over tens of millions of elements.
struct fast_random {
  std::uint64_t s[4];
  fast_random() {
    for (auto& w : s) w = rng()() | 1;
  }
  std::uint64_t next() {
    const std::uint64_t r = s[0] + s[3], t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return r;
  }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1p-53; }
  /// Zero mean, unit variance, bell-shaped (sum of four uniforms): shape does not matter to these tests.
  double normal() {
    return (uniform(-1, 1) + uniform(-1, 1) + uniform(-1, 1) + uniform(-1, 1)) * 0.8660254037844386;
  }
};

}  // namespace ptest
