// The carries of a prefix on the TF32 panels (tf32_panel_chain.cuh): each chain's inclusive scan over its m
// group products V[0..m), as batched products, one cuBLAS call a level (cublas_chain.cuh,
// scan_group_products), their pointers built by one kernel from this layout.
//
// A Sklansky scan: at level l every position i with bit l set takes S[i] <- S[low] S[i] (in the chain's
// order), low the last position of the block of 2^l before i's: ceil(log2 m) levels of about m / 2
// products each. A level's time is that of its products on the device at once: at N = 256 cuBLAS runs 16
// of them in 8.7 us and 32 in 12 (H200). So where a level would hold more than 16 (`paired`), the scan
// first multiplies pairs, W[i] = V[2i] V[2i + 1] (the prefix at 2i + 1 is then the scan of W at i), scans
// the m / 2 pairs, and fixes up the even positions, S[2i] = S[2i - 1] V[2i]: for m = 63, levels of 31, 5 x
// 15-16 and 31 products, 68 us, against 6 x 31-32, 72 us (the prefix of 1024 matrices 0.472 -> 0.467 ms).
//
// cuBLAS's output may not alias an operand, so values move between two buffers, [0] (the group products,
// chain s's m at (s m + j) N^2) and [1], by the parity of their updates; carry_buffer says where each
// position's scan ends.
#pragma once

#include "../layout.hpp"

namespace parascan {
namespace detail {

PARASCAN_HD inline int odd_bits(index_t v) {
#if defined(__CUDA_ARCH__)
  return __popcll(static_cast<unsigned long long>(v)) & 1;
#else
  return __builtin_popcountll(static_cast<unsigned long long>(v)) & 1;
#endif
}

/// The buffer in which position j's scan ends. Unpaired: buffer 0, taken out of at every update (odd_bits).
/// Paired: position 0 stays in 0, the fixed-up even positions are written to 1, and the odd ones are pair
/// i = (j - 1) / 2 of a scan that starts in buffer 1 (its places: the odd slots, free once paired).
PARASCAN_HD inline int carry_buffer(index_t j, bool paired) {
  if (!paired) return odd_bits(j);
  if (j == 0) return 0;
  return j % 2 == 0 ? 1 : 1 ^ odd_bits(j / 2);
}

struct group_scan {
  float* buffers[2] = {nullptr, nullptr};
  index_t count = 0, m = 0, NN = 0;
  bool left_to_right = true, paired = false;
  int calls = 0;             // batched calls: [the pairs,] the Sklansky levels[, the fix-up]
  index_t item_at[67] = {};  // call c's first item (its items chain by chain)

  PARASCAN_HD index_t scanned() const { return paired ? m / 2 : m; }  // the Sklansky scan's length
  /// Positions i < n with bit l set: the products of a level.
  PARASCAN_HD static index_t level_items(index_t n, int l) {
    const index_t block = index_t(2) << l, half = index_t(1) << l;
    return (n / block) * half + (n % block > half ? n % block - half : 0);
  }
  /// Products a chain in call c.
  PARASCAN_HD index_t per_chain(int c) const {
    if (paired && c == 0) return m / 2;
    if (paired && c == calls - 1) return (m - 1) / 2;
    return level_items(scanned(), paired ? c - 1 : c);
  }
  /// Lays out the calls (host).
  void plan() {
    for (int l = 0; (index_t(1) << l) < scanned(); ++l) ++calls;
    if (paired) calls += 2;
    for (int c = 0; c < calls; ++c) item_at[c + 1] = item_at[c] + count * per_chain(c);
  }

  PARASCAN_HD float* at(int buffer, index_t s, index_t j) const { return buffers[buffer] + (s * m + j) * NN; }
  /// The pointers of item k: C = A B.
  PARASCAN_HD void item(index_t k, const float*& a, const float*& b, float*& c) const {
    int call = 0;
    while (k >= item_at[call + 1]) ++call;
    const index_t r = k - item_at[call], n = per_chain(call), s = r / n, i = r % n;
    const float *earlier, *later;
    if (paired && call == 0) {  // W[i] = V[2i] V[2i + 1], into the odd slot of buffer 1
      earlier = at(0, s, 2 * i);
      later = at(0, s, 2 * i + 1);
      c = at(1, s, 2 * i + 1);
    } else if (paired && call == calls - 1) {  // S[2j] = S[2j - 1] V[2j], j = i + 1, into buffer 1
      const index_t j = 2 * (i + 1);
      earlier = at(carry_buffer(j - 1, true), s, j - 1);
      later = at(0, s, j);
      c = at(1, s, j);
    } else {  // Sklansky level l: position p (bit l set) from low; (paired: pair p at slot 2p + 1)
      const int l = paired ? call - 1 : call, start = paired ? 1 : 0;
      const index_t half = index_t(1) << l;
      const index_t p = ((i >> l) << (l + 1)) | half | (i & (half - 1)), low = ((p >> (l + 1)) << (l + 1)) + half - 1;
      const auto slot = [&](index_t q) { return paired ? 2 * q + 1 : q; };
      const int from = start ^ odd_bits(p & (half - 1));
      earlier = at(start ^ (l & 1), s, slot(low));
      later = at(from, s, slot(p));
      c = at(from ^ 1, s, slot(p));
    }
    a = left_to_right ? earlier : later;
    b = left_to_right ? later : earlier;
  }
};

}  // namespace detail
}  // namespace parascan
