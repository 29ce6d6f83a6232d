// The bench's packed batches (cu_seqlens offsets), shared by parascan_bench_cuda and parascan_packed_probe
// so that the probe times the bench's very batches.
#pragma once

#include <parascan/layout.hpp>

#include <algorithm>
#include <random>
#include <vector>

namespace bench {

/// Lengths uniform in 1..8192 until `total_rows` rows in all (the last one cut).
inline std::vector<parascan::index_t> realistic_offsets(parascan::index_t total_rows) {
  std::mt19937_64 g(11);
  std::uniform_int_distribution<parascan::index_t> len(1, 8192);
  std::vector<parascan::index_t> off = {0};
  while (off.back() < total_rows) off.push_back(std::min(total_rows, off.back() + len(g)));
  return off;
}

/// `short_count` sequences of 1..64 rows with `long_count` of `long_rows` rows spread among them.
inline std::vector<parascan::index_t> skewed_offsets(parascan::index_t short_count, parascan::index_t long_count,
                                                     parascan::index_t long_rows) {
  using index_t = parascan::index_t;
  std::mt19937_64 g(12);
  std::uniform_int_distribution<index_t> len(1, 64);
  std::vector<index_t> off = {0};
  const index_t every = std::max<index_t>(1, short_count / std::max<index_t>(long_count, 1));
  for (index_t i = 0; i < short_count; ++i) {
    if (i % every == every / 2 && i / every < long_count) off.push_back(off.back() + long_rows);
    off.push_back(off.back() + len(g));
  }
  return off;
}

}  // namespace bench
