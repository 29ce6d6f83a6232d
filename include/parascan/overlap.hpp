// Whether two strided views share a byte: exact for views of up to five axes (the layouts' n0, n1 and
// time, and a runtime-size matrix's rows and columns), by a bounded search over the linear Diophantine problem their addresses pose (NumPy's
// `shares_memory` decides the same question the same way). Interleaved views - an output in the odd
// channels of a tensor whose even channels hold an input - share no element and are told apart from
// views that do, which comparing address ranges cannot do.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "config.hpp"

namespace parascan::detail {

/// The answer of a bounded search.
enum class overlap { no, yes, unknown };

/// One axis of a view's address set: `count` positions `step` bytes apart (step > 0).
struct address_axis {
  __int128 step = 0, last = 0;  // last: the largest index (count - 1)
};

/// Whether sum(axes[i].step * x[i]) == target for some 0 <= x[i] <= axes[i].last, for axes sorted by
/// decreasing step; `budget` bounds the search nodes (unknown when it runs out). Each level keeps only
/// the x[0] whose remainder the later steps' gcd divides, from the largest down.
inline overlap solve_bounded(const address_axis* axes, int n, __int128 target, long& budget) {
  if (--budget < 0) return overlap::unknown;
  if (target < 0) return overlap::no;
  if (n == 0) return target == 0 ? overlap::yes : overlap::no;
  const address_axis& a = axes[0];
  if (n == 1) return target % a.step == 0 && target / a.step <= a.last ? overlap::yes : overlap::no;
  __int128 rest = 0;  // the most the later axes reach
  std::int64_t g = 0;
  for (int i = 1; i < n; ++i) {
    rest += axes[i].step * axes[i].last;
    g = std::gcd(g, static_cast<std::int64_t>(axes[i].step));
  }
  __int128 lo = target > rest ? (target - rest + a.step - 1) / a.step : 0;
  __int128 hi = std::min<__int128>(a.last, target / a.step);
  // a.step * x == target (mod g): x == x0 (mod g / gcd(a.step, g)).
  const std::int64_t step_mod = static_cast<std::int64_t>(a.step % g);
  const std::int64_t d = std::gcd(step_mod, g);
  const std::int64_t t_mod = static_cast<std::int64_t>(target % g);
  if (t_mod % d != 0) return overlap::no;
  const std::int64_t m = g / d;
  std::int64_t x0 = 0;
  if (m > 1) {
    // x0 = (t / d) * inverse(step / d) mod m, by the extended Euclid algorithm.
    std::int64_t r0 = (step_mod / d) % m, r1 = m, s0 = 1, s1 = 0;
    while (r1 != 0) {
      const std::int64_t q = r0 / r1;
      std::swap(r0 -= q * r1, r1);
      std::swap(s0 -= q * s1, s1);
    }
    x0 = static_cast<std::int64_t>(((static_cast<__int128>(t_mod / d) * s0) % m + m) % m);
  }
  // The largest x <= hi with x == x0 (mod m), then down by m.
  __int128 x = hi - ((hi - x0) % m + m) % m;
  bool unknown = false;
  for (; x >= lo; x -= m) {
    const overlap r = solve_bounded(axes + 1, n - 1, target - a.step * x, budget);
    if (r == overlap::yes) return r;
    if (r == overlap::unknown) {
      unknown = true;
      break;
    }
  }
  return unknown ? overlap::unknown : overlap::no;
}

/// A view's address set: base + sum(step[i] * x[i]) bytes, 0 <= x[i] < count[i], elements `size` bytes
/// (an axis of count 1 or step 0 adds nothing).
struct address_set {
  static constexpr int max_axes = 5;
  std::uintptr_t base = 0;
  std::size_t size = 0;
  std::int64_t step[max_axes] = {0, 0, 0, 0, 0};  // bytes, >= 0
  std::int64_t count[max_axes] = {1, 1, 1, 1, 1};
};

/// Whether two address sets share a byte (unknown when the search exceeds `budget` nodes).
inline overlap shares_bytes(const address_set& p, const address_set& q, long budget = 100000) {
  // p's element at a and q's at b share a byte iff -(p.size - 1) <= a - b <= q.size - 1. With
  // a - b = (p.base - q.base) + sum p.step x - sum q.step y, and y = count - 1 - y' on q's axes, every
  // coefficient is positive: sum p.step x + sum q.step y' = delta - (p.base - q.base) + sum q.step (count - 1).
  address_axis axes[2 * address_set::max_axes];
  int n = 0;
  __int128 shift = 0;
  for (int i = 0; i < address_set::max_axes; ++i)
    if (p.step[i] > 0 && p.count[i] > 1) axes[n++] = {p.step[i], p.count[i] - 1};
  for (int i = 0; i < address_set::max_axes; ++i)
    if (q.step[i] > 0 && q.count[i] > 1) {
      axes[n++] = {q.step[i], q.count[i] - 1};
      shift += static_cast<__int128>(q.step[i]) * (q.count[i] - 1);
    }
  for (int i = 1; i < n; ++i)  // by decreasing step (at most ten)
    for (int j = i; j > 0 && (axes[j].step > axes[j - 1].step); --j) std::swap(axes[j - 1], axes[j]);
  const __int128 offset = static_cast<__int128>(p.base) - static_cast<__int128>(q.base);
  bool unknown = false;
  for (__int128 delta = -static_cast<__int128>(p.size) + 1; delta < static_cast<__int128>(q.size); ++delta) {
    const overlap r = solve_bounded(axes, n, delta - offset + shift, budget);
    if (r == overlap::yes) return r;
    unknown = unknown || r == overlap::unknown;
  }
  return unknown ? overlap::unknown : overlap::no;
}

}  // namespace parascan::detail
