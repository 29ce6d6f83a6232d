// Shared test support: random inputs, poisoned outputs, error measures. Backend-neutral; a test
// translation unit includes one backend header (backend_host.hpp or backend_cuda.cuh) before the cases,
// which gives ptest::buffer<T>, ptest::exec(), ptest::backend_name and the storage aliases
// ptest::bf16, ptest::f16, ptest::complex64.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <parascan/parascan.hpp>

#include "seed.hpp"  // rng(): fresh randomness per run, PARASCAN_TEST_SEED repeats one

namespace ptest {

using parascan::index_t;

/// The lengths every operator is tested at (a large non-power-of-two last).
inline const std::vector<index_t>& lengths() {
  static const std::vector<index_t> v = {0, 1, 2, 31, 32, 33, 1000, 4097, 100003};
  return v;
}

inline double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng()); }
inline double normal() { return std::normal_distribution<double>(0.0, 1.0)(rng()); }

/// Value used to poison outputs before a run, so that unwritten elements show.
template <class T>
T poison() {
  if constexpr (std::is_floating_point<T>::value) return std::numeric_limits<T>::quiet_NaN();
  else return T(static_cast<float>(-12345.0));
}

/// Relative error ||got - ref|| / ||ref|| (2-norms), NaN if any element of got is NaN where ref is not.
struct error_meter {
  double diff2 = 0, ref2 = 0;
  bool nan = false;
  void add(double got, double ref) {
    if (std::isnan(got) != std::isnan(ref)) nan = true;
    if (std::isnan(ref)) return;
    if (std::isinf(ref) || std::isinf(got)) {
      if (got != ref) nan = true;
      return;
    }
    diff2 += (got - ref) * (got - ref);
    ref2 += ref * ref;
  }
  template <class C>
  void add_complex(const C& got, const std::complex<double>& ref) {
    add(double(got.real()), ref.real());
    add(double(got.imag()), ref.imag());
  }
  double relative() const { return nan ? std::numeric_limits<double>::infinity() : std::sqrt(diff2 / (ref2 > 0 ? ref2 : 1.0)); }
};

/// Sequential fp64 reference of an inclusive/exclusive, forward/reverse scan over one sequence:
/// combine(carry, t) advances the carry with step t; emit(t, carry) records an output.
template <class Carry, class Combine, class Emit>
Carry reference_scan(index_t n, bool exclusive, bool reverse, Carry carry, Combine combine, Emit emit) {
  for (index_t p = 0; p < n; ++p) {
    const index_t t = reverse ? n - 1 - p : p;
    if (exclusive) emit(t, carry);
    carry = combine(carry, t);
    if (!exclusive) emit(t, carry);
  }
  return carry;
}

/// The options combinations every operator is tested with.
struct scan_flags {
  bool exclusive, reverse, with_initial, with_final;
};
inline std::vector<scan_flags> all_flags() {
  std::vector<scan_flags> v;
  for (int m = 0; m < 16; ++m) v.push_back({bool(m & 1), bool(m & 2), bool(m & 4), bool(m & 8)});
  return v;
}
inline std::string describe(const scan_flags& f) {
  return std::string(f.exclusive ? "exclusive" : "inclusive") + (f.reverse ? " reverse" : " forward") +
         (f.with_initial ? " +initial" : "") + (f.with_final ? " +final" : "");
}

/// The options a flag combination stands for, with `initial` and `final` arrays of the backend's memory.
template <class Y>
parascan::options<Y> options_for(const scan_flags& f, const Y* initial, Y* final) {
  parascan::options<Y> opts;
  opts.exclusive = f.exclusive;
  opts.reverse = f.reverse;
  opts.initial = f.with_initial ? initial : nullptr;
  opts.final = f.with_final ? final : nullptr;
  return opts;
}

/// The layouts every operator is tested on.
enum class layout_kind { single, bdt, btd, strided, packed_td, packed_dt };
inline const char* name_of(layout_kind k) {
  const char* names[] = {"single", "bdt", "btd", "strided", "packed_td", "packed_dt"};
  return names[int(k)];
}
inline const std::vector<layout_kind>& all_layouts() {
  static const std::vector<layout_kind> v = {layout_kind::single,   layout_kind::bdt,       layout_kind::btd,
                                             layout_kind::strided,  layout_kind::packed_td, layout_kind::packed_dt};
  return v;
}

/// A batch shape on one layout: (n0, n1) sequences of T steps, or n0 packed sequences of random lengths
/// up to T (offsets) with n1 channels. The strided layout permutes and pads the axes and starts one
/// element past the buffer's start (unaligned).
struct shape {
  layout_kind kind;
  index_t n0, n1, T;
  std::vector<index_t> offsets;  // packed kinds: n0 + 1 entries

  static shape make(layout_kind kind, index_t T) {
    shape s{kind, 2, 3, T, {}};
    if (T > 10000) s.n0 = 1, s.n1 = 2;  // keep the large lengths quick
    if (kind == layout_kind::single) s.n0 = s.n1 = 1;
    if (kind == layout_kind::packed_td || kind == layout_kind::packed_dt) {
      s.n0 = 4;
      s.offsets.push_back(0);
      for (index_t i = 0; i < s.n0; ++i)
        s.offsets.push_back(s.offsets.back() + (i == 1 ? T : index_t(uniform(0, double(T) + 0.999))));
    }
    return s;
  }
  bool packed() const { return !offsets.empty(); }
  index_t count() const { return n0 * n1; }
  index_t total() const { return packed() ? offsets.back() : T; }
  index_t padded_T() const { return total() + 2; }
  /// Elements a buffer needs for this view.
  std::size_t elements() const {
    switch (kind) {
      case layout_kind::strided: return std::size_t(1 + n0 * (n1 + 1) * padded_T());
      case layout_kind::packed_td:
      case layout_kind::packed_dt: return std::size_t(total() * n1);
      default: return std::size_t(n0 * n1 * T);
    }
  }
  template <class T_>
  parascan::sequences<T_> view(T_* base, const index_t* offs) const {
    switch (kind) {
      case layout_kind::single: return parascan::single(base, T);
      case layout_kind::bdt: return parascan::bdt(base, n0, n1, T);
      case layout_kind::btd: return parascan::btd(base, n0, T, n1);
      case layout_kind::strided:  // time-major rows of n1 channels padded by one, batches apart
        return parascan::strided(base + 1, n0, n1, (n1 + 1) * padded_T(), 1, T, n1 + 1);
      case layout_kind::packed_td: return parascan::packed_td(base, offs, n0, n1);
      case layout_kind::packed_dt: return parascan::packed_dt(base, offs, n0, n1, total());
    }
    return {};
  }
  std::string describe() const {
    return std::string(name_of(kind)) + " n0=" + std::to_string(n0) + " n1=" + std::to_string(n1) +
           " T=" + std::to_string(T);
  }
};

/// Calls f(shape, flags) for every layout x length x options combination (all option combinations on
/// short lengths, a spread of them on the long ones), with the configuration in doctest's context.
template <class F>
void for_each_config(F&& f) {
  for (layout_kind kind : all_layouts())
    for (index_t T : lengths()) {
      const auto flags = all_flags();
      for (std::size_t i = 0; i < flags.size(); ++i) {
        if (T > 5000 && i % 5 != 0 && i != flags.size() - 1) continue;
        const shape sh = shape::make(kind, T);
        INFO(std::string(backend_name) << " " << sh.describe() << " " << describe(flags[i]));
        f(sh, flags[i]);
      }
    }
}

/// A shape's offsets array in the backend's memory (null pointer for unpacked shapes).
struct backend_offsets {
  buffer<index_t> memory;
  explicit backend_offsets(const shape& sh) : memory(sh.offsets.size()) {
    memory.host = sh.offsets;
    memory.upload();
  }
  const index_t* get(const shape& sh) { return sh.packed() ? memory.data() : nullptr; }
};

/// A buffer for a shape filled by gen(), uploaded; its view in backend memory is buffer.data() + view().
template <class T, class Gen>
void fill(buffer<T>& b, Gen&& gen) {
  for (auto& x : b.host) x = gen();
  b.upload();
}

/// A view's sequence s, element t, on the host mirror (for references).
template <class T>
T& host_at(std::vector<T>& mirror, const shape& sh, index_t s, index_t t) {
  return sh.view(mirror.data(), sh.packed() ? sh.offsets.data() : nullptr).at(s, t);
}

}  // namespace ptest
