// The exact overlap decision for strided views (overlap.hpp) against brute force on thousands of random
// small views (element sizes 1..8 bytes, strides 0..9 elements, up to three axes, bases a few bytes
// apart), and the search budget: a problem too large to finish is "unknown", never "no".
#include <doctest/doctest.h>

#include <random>
#include <set>

#include <parascan/overlap.hpp>

#include "support/seed.hpp"

using parascan::detail::address_set;
using parascan::detail::overlap;
using parascan::detail::shares_bytes;

namespace {

std::set<std::uintptr_t> bytes_of(const address_set& v) {
  std::set<std::uintptr_t> out;
  for (std::int64_t i = 0; i < v.count[0]; ++i)
    for (std::int64_t j = 0; j < v.count[1]; ++j)
      for (std::int64_t k = 0; k < v.count[2]; ++k)
        for (std::size_t b = 0; b < v.size; ++b)
          out.insert(v.base + std::uintptr_t(i * v.step[0] + j * v.step[1] + k * v.step[2]) + b);
  return out;
}

address_set random_set(std::mt19937_64& g) {
  const std::size_t sizes[] = {1, 2, 4, 8};
  address_set v;
  v.size = sizes[g() % 4];
  v.base = 4096 + g() % 48;
  for (int a = 0; a < 3; ++a) {
    v.count[a] = std::int64_t(1 + g() % 4);
    v.step[a] = std::int64_t(g() % 10) * std::int64_t(v.size);
  }
  return v;
}

}  // namespace

TEST_CASE("overlap: the exact decision agrees with brute force on random small views") {
  auto& g = ptest::rng();
  int shared = 0, apart = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const address_set p = random_set(g), q = random_set(g);
    const auto bp = bytes_of(p), bq = bytes_of(q);
    bool truth = false;
    for (auto b : bp) truth = truth || bq.count(b) != 0;
    const overlap got = shares_bytes(p, q);
    INFO("trial " << trial);
    REQUIRE(got != overlap::unknown);
    CHECK((got == overlap::yes) == truth);
    (truth ? shared : apart)++;
  }
  CHECK(shared > 1000);  // both answers are exercised
  CHECK(apart > 1000);
}

TEST_CASE("overlap: interleaved channels are apart, a shared element is found, long searches are unknown") {
  // (B, T, 2D) floats: an input in the even channels, an output in the odd ones.
  const std::int64_t B = 3, T = 1000, D = 64, f = 4;
  const address_set even{0x10000, 4, {T * 2 * D * f, 2 * f, 2 * D * f}, {B, D, T}};
  address_set odd = even;
  odd.base += f;
  CHECK(shares_bytes(even, odd) == overlap::no);
  address_set shifted = even;
  shifted.base += 2 * f;  // channel c + 1 of the input's channel c: shared
  CHECK(shares_bytes(even, shifted) == overlap::yes);
  address_set wide = odd;  // doubles at the odd float slots reach into the next even one
  wide.size = 8;
  CHECK(shares_bytes(even, wide) == overlap::yes);
  // A budget of a single node cannot decide a three-axis problem: unknown, which callers treat as shared.
  CHECK(shares_bytes(even, odd, 1) == overlap::unknown);
}
