// Layouts: every factory of layout.hpp addresses the elements it documents. Each view is laid over a
// buffer whose element i holds i, so that at(s, t) reads back its own offset from the base; 64-bit offsets
// past 2^31 are checked on addresses alone (nothing that large is allocated).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <parascan/layout.hpp>

using parascan::index_t;

namespace {

// The buffer 0, 1, 2, ... as doubles (exact up to 2^53).
std::vector<double> iota_buffer(index_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0.0);
  return v;
}

// Checks every element of view v against expected(s, t) -> offset from base, through at(), begin_of()
// and cursor_of().
template <class Expected>
void check_addresses(const parascan::sequences<double>& v, const double* base, Expected expected) {
  for (index_t s = 0; s < v.count(); ++s) {
    CAPTURE(s);
    CHECK(v.begin_of(s) == base + expected(s, 0));
    const auto c = v.cursor_of(s);
    for (index_t t = 0; t < v.length_of(s); ++t) {
      CAPTURE(t);
      CHECK(v.at(s, t) == double(expected(s, t)));
      CHECK(&c[t] == &v.at(s, t));
    }
  }
}

// Byte distance of element (s, t) from a view's base, without dereferencing anything.
template <class T>
std::uint64_t byte_offset(const parascan::sequences<T>& v, index_t s, index_t t) {
  return reinterpret_cast<std::uintptr_t>(&v.at(s, t)) - reinterpret_cast<std::uintptr_t>(v.data);
}

// A base address that is never dereferenced: layouts only compute addresses from it.
template <class T>
T* fake_base() {
  return reinterpret_cast<T*>(std::uintptr_t(1) << 44);
}

}  // namespace

TEST_CASE("single: one sequence, unit or given stride") {
  auto buf = iota_buffer(40);
  auto v = parascan::single(buf.data(), 13);
  CHECK(v.count() == 1);
  CHECK(!v.packed());
  CHECK(v.length_of(0) == 13);
  check_addresses(v, buf.data(), [](index_t, index_t t) { return t; });

  auto w = parascan::single(buf.data() + 1, 13, 3);
  CHECK(w.length_of(0) == 13);
  check_addresses(w, buf.data(), [](index_t, index_t t) { return 1 + 3 * t; });
}

TEST_CASE("bdt: (B, D, T) contiguous, sequence s = b * D + d") {
  const index_t B = 3, D = 4, T = 5;
  auto buf = iota_buffer(B * D * T);
  auto v = parascan::bdt(buf.data(), B, D, T);
  CHECK(v.count() == B * D);
  for (index_t s = 0; s < v.count(); ++s) CHECK(v.length_of(s) == T);
  check_addresses(v, buf.data(), [&](index_t s, index_t t) { return s * T + t; });
}

TEST_CASE("btd: (B, T, D) contiguous, channels next to each other") {
  const index_t B = 3, T = 5, D = 4;
  auto buf = iota_buffer(B * T * D);
  auto v = parascan::btd(buf.data(), B, T, D);
  CHECK(v.count() == B * D);
  for (index_t s = 0; s < v.count(); ++s) CHECK(v.length_of(s) == T);
  check_addresses(v, buf.data(), [&](index_t s, index_t t) { return (s / D) * T * D + t * D + s % D; });
}

TEST_CASE("strided: any extents and strides, including a broadcast (zero) stride") {
  auto buf = iota_buffer(1000);
  auto v = parascan::strided(buf.data() + 7, 2, 3, 200, 50, 6, 4);
  CHECK(v.count() == 6);
  check_addresses(v, buf.data(), [](index_t s, index_t t) { return 7 + (s / 3) * 200 + (s % 3) * 50 + 4 * t; });

  auto broadcast = parascan::strided(buf.data(), 2, 3, 0, 1, 6, 0);  // one value per channel, every step
  check_addresses(broadcast, buf.data(), [](index_t s, index_t) { return s % 3; });
}

TEST_CASE("packed_td: (total, D) time-major rows, sequences from the offsets") {
  const std::vector<index_t> offsets = {0, 3, 3, 7, 8};  // lengths 3, 0, 4, 1
  const index_t N = 4, D = 2;
  auto buf = iota_buffer(offsets.back() * D);
  auto v = parascan::packed_td(buf.data(), offsets.data(), N, D);
  CHECK(v.packed());
  CHECK(v.count() == N * D);
  for (index_t s = 0; s < v.count(); ++s) CHECK(v.length_of(s) == offsets[s / D + 1] - offsets[s / D]);
  check_addresses(v, buf.data(), [&](index_t s, index_t t) { return (offsets[s / D] + t) * D + s % D; });

  auto one_channel = parascan::packed_td(buf.data(), offsets.data(), N);
  CHECK(one_channel.count() == N);
  check_addresses(one_channel, buf.data(), [&](index_t s, index_t t) { return offsets[s] + t; });
}

TEST_CASE("packed_dt: (D, total) channel-major rows") {
  const std::vector<index_t> offsets = {0, 2, 6, 6, 9};
  const index_t N = 4, D = 3, total = offsets.back();
  auto buf = iota_buffer(total * D);
  auto v = parascan::packed_dt(buf.data(), offsets.data(), N, D, total);
  CHECK(v.count() == N * D);
  for (index_t s = 0; s < v.count(); ++s) CHECK(v.length_of(s) == offsets[s / D + 1] - offsets[s / D]);
  check_addresses(v, buf.data(), [&](index_t s, index_t t) { return (s % D) * total + offsets[s / D] + t; });
}

TEST_CASE("packed: given channel and time strides; offsets need not start at zero") {
  const std::vector<index_t> offsets = {2, 5, 9};
  auto buf = iota_buffer(200);
  auto v = parascan::packed(buf.data(), offsets.data(), 2, 3, 1, 4);
  CHECK(v.count() == 6);
  CHECK(v.length_of(0) == 3);
  CHECK(v.length_of(5) == 4);
  check_addresses(v, buf.data(), [&](index_t s, index_t t) { return (offsets[s / 3] + t) * 4 + s % 3; });
}

TEST_CASE("read-only conversion keeps the addressing") {
  const std::vector<index_t> offsets = {0, 3, 7};
  auto buf = iota_buffer(100);
  auto v = parascan::packed_td(buf.data(), offsets.data(), 2, 3);
  parascan::sequences<const double> c = v;
  for (index_t s = 0; s < v.count(); ++s) {
    CHECK(c.length_of(s) == v.length_of(s));
    for (index_t t = 0; t < v.length_of(s); ++t) CHECK(&c.at(s, t) == &v.at(s, t));
  }
}

TEST_CASE("starts_aligned_to: the base and both batch strides, never a packed view") {
  alignas(16) static float buf[4 * 6 * 8 + 4];
  CHECK(parascan::bdt(buf, 4, 6, 8).starts_aligned_to(16));       // sequences 32 bytes apart
  CHECK(!parascan::bdt(buf + 1, 4, 6, 8).starts_aligned_to(16));  // the base one element on
  CHECK(parascan::bdt(buf + 1, 4, 6, 8).starts_aligned_to(4));
  CHECK(!parascan::bdt(buf, 4, 6, 5).starts_aligned_to(16));      // 20 bytes apart
  CHECK(parascan::bdt(buf, 4, 6, 5).starts_aligned_to(4));
  CHECK(parascan::single(buf, 7).starts_aligned_to(16));
  CHECK(parascan::bdt(buf, 4, 1, 8).starts_aligned_to(16));
  CHECK(parascan::bdt(buf, 1, 1, 5).starts_aligned_to(16));      // one sequence: its stride never counts
  CHECK(!parascan::bdt(buf, 2, 1, 5).starts_aligned_to(16));
  CHECK(!parascan::btd(buf, 4, 8, 6).starts_aligned_to(16));      // channels one element apart
  const parascan::index_t offsets[] = {0, 4, 8};
  CHECK(!parascan::packed_td(buf, offsets, 2, 4).starts_aligned_to(16));
}

TEST_CASE("64-bit offsets: elements past 2^31 and 2^32 are addressed without overflow") {
  using E = float;
  constexpr std::uint64_t e = sizeof(E);

  SUBCASE("bdt with B * D * T > 2^32") {
    const index_t B = 5, D = 1 << 16, T = 1 << 16;  // 5 * 2^32 elements
    auto v = parascan::bdt(fake_base<E>(), B, D, T);
    CHECK(v.count() == B * D);
    const index_t s = B * D - 1, t = T - 1;
    CHECK(byte_offset(v, s, t) == std::uint64_t(s * T + t) * e);
    CHECK(byte_offset(v, 3 * D + 7, 11) == std::uint64_t((3 * D + 7) * T + 11) * e);
  }
  SUBCASE("btd with a time offset past 2^31") {
    const index_t B = 3, T = index_t(1) << 31, D = 4;
    auto v = parascan::btd(fake_base<E>(), B, T, D);
    CHECK(byte_offset(v, 2 * D + 3, T - 1) == std::uint64_t(2 * T * D + (T - 1) * D + 3) * e);
  }
  SUBCASE("single sequence longer than 2^32 with a stride") {
    const index_t n = (index_t(1) << 33) + 5;
    auto v = parascan::single(fake_base<E>(), n, 3);
    CHECK(v.length_of(0) == n);
    CHECK(byte_offset(v, 0, n - 1) == std::uint64_t((n - 1) * 3) * e);
  }
  SUBCASE("strided with batch strides past 2^31") {
    const index_t s0 = (index_t(1) << 34) + 1, s1 = (index_t(1) << 31) + 3;
    auto v = parascan::strided(fake_base<E>(), 4, 3, s0, s1, 10, 7);
    CHECK(byte_offset(v, 11, 9) == std::uint64_t(3 * s0 + 2 * s1 + 63) * e);
  }
  SUBCASE("packed offsets past 2^32") {
    const index_t big = (index_t(1) << 32) + 17;
    const std::vector<index_t> offsets = {0, big, 2 * big + 5};
    auto td = parascan::packed_td(fake_base<E>(), offsets.data(), 2, 8);
    CHECK(td.length_of(8 + 7) == big + 5);
    CHECK(byte_offset(td, 8 + 7, big + 4) == std::uint64_t((big + big + 4) * 8 + 7) * e);
    const index_t total = offsets.back();
    auto dt = parascan::packed_dt(fake_base<E>(), offsets.data(), 2, 8, total);
    CHECK(byte_offset(dt, 8 + 7, big + 4) == std::uint64_t(7 * total + big + big + 4) * e);
  }
}

TEST_CASE("longest_in: the longest sequence of each range, ranges in any order, as a loop over each") {
  std::mt19937 g(7);
  std::vector<parascan::index_t> offsets{0};
  for (int i = 0; i < 300; ++i) offsets.push_back(offsets.back() + parascan::index_t(g() % 50));  // empty ones too
  const parascan::index_t N = 300;
  std::vector<float> data(1);
  for (const parascan::index_t D : {1, 5, 32, 48, 64, 100}) {
    const auto view = parascan::packed_td(data.data(), offsets.data(), N, D);
    const auto reference = [&](parascan::index_t s0, parascan::index_t s1) {
      parascan::index_t longest = 0;
      for (parascan::index_t s = s0; s < s1; ++s) longest = std::max(longest, view.length_of(s));
      return longest;
    };
    const auto longest = [&](parascan::index_t s0, parascan::index_t s1) {
      return parascan::longest_in(view, s0, s1);
    };
    // Groups of 32 in order (as dispatch asks), then ranges of random extents at random places.
    for (parascan::index_t s0 = 0; s0 < N * D; s0 += 32) {
      const parascan::index_t s1 = std::min(N * D, s0 + 32);
      INFO("D = " << D << ", [" << s0 << ", " << s1 << ")");
      CHECK(longest(s0, s1) == reference(s0, s1));
    }
    for (int k = 0; k < 500; ++k) {
      const parascan::index_t s0 = parascan::index_t(g() % std::uint64_t(N * D)),
                              s1 = std::min(N * D, s0 + parascan::index_t(g() % 200));
      INFO("D = " << D << ", [" << s0 << ", " << s1 << ")");
      CHECK(longest(s0, s1) == reference(s0, s1));
    }
    CHECK(longest(7, 7) == 0);
  }
  const auto uniform = parascan::btd(data.data(), 2, 9, 3);
  CHECK(parascan::longest_in(uniform, 0, 6) == 9);
  CHECK(parascan::longest_in(uniform, 2, 2) == 0);
}

TEST_CASE("groups_longer_than: the groups with a sequence over a threshold, in order, as longest_in finds them") {
  std::mt19937 g(11);
  std::vector<parascan::index_t> offsets{0};
  for (int i = 0; i < 300; ++i)  // mostly short, some long, some empty
    offsets.push_back(offsets.back() + parascan::index_t(g() % 8 == 0 ? 100 + g() % 900 : g() % 50));
  const parascan::index_t N = 300;
  std::vector<float> data(1);
  for (const parascan::index_t D : {1, 5, 32, 48, 64, 100})
    for (const parascan::index_t size : {32, 7})
      for (const parascan::index_t threshold : {0, 49, 384, 2000}) {
        const auto view = parascan::packed_td(data.data(), offsets.data(), N, D);
        std::vector<std::pair<parascan::index_t, parascan::index_t>> expected, seen;
        for (parascan::index_t s0 = 0; s0 < N * D; s0 += size) {
          const parascan::index_t longest = parascan::longest_in(view, s0, std::min(N * D, s0 + size));
          if (longest > threshold) expected.emplace_back(s0 / size, longest);
        }
        parascan::groups_longer_than(view, size, threshold,
                                     [&](parascan::index_t group, parascan::index_t longest) {
                                       seen.emplace_back(group, longest);
                                     });
        INFO("D = " << D << ", groups of " << size << ", threshold " << threshold);
        CHECK(seen == expected);
      }
  std::vector<std::pair<parascan::index_t, parascan::index_t>> seen;
  const auto record = [&](parascan::index_t group, parascan::index_t longest) { seen.emplace_back(group, longest); };
  parascan::groups_longer_than(parascan::btd(data.data(), 2, 9, 3), 4, 8, record);  // 6 sequences of 9
  CHECK(seen == std::vector<std::pair<parascan::index_t, parascan::index_t>>{{0, 9}, {1, 9}});
  seen.clear();
  parascan::groups_longer_than(parascan::btd(data.data(), 2, 9, 3), 4, 9, record);
  CHECK(seen.empty());
  parascan::groups_longer_than(parascan::packed_td(data.data(), offsets.data(), 0, 64), 32, 0, record);
  CHECK(seen.empty());
}
