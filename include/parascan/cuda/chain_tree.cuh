// The layout of cublas_chain.cuh's tree over a call's chains: each level's length, where its pairs live in
// the workspace, and the operands of every product (item) of every level, computed alike on the host and
// the device. tf32_panel_chain.cuh reads its level 0 (the initial matrix, the factors, their outputs).
#pragma once

#include "../layout.hpp"
#include "../matrix_sequences.hpp"

namespace parascan {
namespace detail {

constexpr int max_tree_levels = 64;

/// Where every product of a tree lives: pointer arrays of every batched call, built in one kernel. Item
/// ranges, level by level: [first pairs: count][other pairs: count (pairs(l) - 1)][even positions: count
/// evens(l)], then (prefix) [the exclusive final products: count].
template <class S>
struct chain_tree {
  matrix_sequences<const S> in;
  matrix_sequences<S> out;  // prefix only
  const S* initial = nullptr;
  S* final = nullptr;       // exclusive prefix: the final products' destination
  S* result = nullptr;      // reduce: the last pair's destination
  S* work = nullptr;
  bool reverse = false, left_to_right = true, prefix = true;
  index_t count = 0, n = 0, NN = 0, lead = 0, out_shift = 0;
  int levels = 0;                       // levels with pairs
  index_t m[max_tree_levels + 1] = {};  // chain length of each level
  index_t work_at[max_tree_levels] = {};  // each level's pairs in `work` (scalars)
  index_t item_at[max_tree_levels + 2] = {};  // each level's first item; [levels]: the final products

  PARASCAN_HD index_t pairs(int l) const { return m[l] / 2; }
  PARASCAN_HD index_t next_length(int l) const { return prefix ? m[l] / 2 : (m[l] + 1) / 2; }
  PARASCAN_HD index_t evens(int l) const { return prefix ? (m[l] - 1) / 2 : 0; }  // even positions >= 2
  PARASCAN_HD index_t time_of(index_t p) const { return reverse ? n - 1 - p : p; }

  PARASCAN_HD const S* x0(index_t s, index_t i) const {
    if (i < lead) return initial + s * NN;
    return in.origins.begin_of(s) + time_of(i - lead) * in.origins.time_stride;
  }
  /// Level-0 output slot i of chain s (null: nothing, the initial matrix's own slot).
  PARASCAN_HD S* o0(index_t s, index_t i) const {
    const index_t p = i + out_shift;
    return p < 0 ? nullptr : out.origins.begin_of(s) + time_of(p) * out.origins.time_stride;
  }
  /// Pair j of level l: in time order, so that every call's operands step in one direction (strided calls).
  PARASCAN_HD index_t slot(int l, index_t j) const { return reverse ? next_length(l) - 1 - j : j; }
  PARASCAN_HD S* w(int l, index_t s, index_t j) const {
    return work + work_at[l] + (s * next_length(l) + slot(l, j)) * NN;
  }
  PARASCAN_HD S* o(int l, index_t s, index_t j) const { return o0(s, ((j + 1) << l) - 1); }
  PARASCAN_HD const S* x(int l, index_t s, index_t j) const {
    if (l == 0) return x0(s, j);
    if (prefix && j == 0) return o(l, s, 0);
    return w(l - 1, s, j);
  }
  /// Where pair j of level l goes: its prefix slot (prefix, j = 0), `result` (reduce, the last pair).
  PARASCAN_HD S* pair_target(int l, index_t s, index_t j) const {
    if (prefix && j == 0) return o(l + 1, s, 0);
    if (!prefix && m[l] == 2) return result + s * NN;
    return w(l, s, j);
  }
  /// The pointers of item k (see the item ranges above): C = A B.
  PARASCAN_HD void item(index_t k, const S*& a, const S*& b, S*& c) const {
    int l = 0;
    while (l < levels && k >= item_at[l + 1]) ++l;
    index_t r = k - item_at[l];
    const S *earlier, *later;
    if (l == levels) {  // the exclusive final product: out[n - 1] then in[n - 1]
      const index_t s = r;
      earlier = out.origins.begin_of(s) + time_of(n - 1) * out.origins.time_stride;
      later = in.origins.begin_of(s) + time_of(n - 1) * in.origins.time_stride;
      c = final + s * NN;
    } else if (r < count * pairs(l)) {  // pair j of chain s, the first pairs of every chain first
      const index_t s = r < count ? r : (r - count) / (pairs(l) - 1);
      const index_t j = r < count ? 0 : (r - count) % (pairs(l) - 1) + 1;
      earlier = x(l, s, 2 * j);
      later = x(l, s, 2 * j + 1);
      c = pair_target(l, s, j);
    } else {  // even position 2j >= 2 of chain s: O[2j] = O[2j - 1] X[2j]
      r -= count * pairs(l);
      const index_t s = r / evens(l), j = r % evens(l) + 1;
      earlier = o(l, s, 2 * j - 1);
      later = x(l, s, 2 * j);
      c = o(l, s, 2 * j);
    }
    a = left_to_right ? earlier : later;
    b = left_to_right ? later : earlier;
  }
};

}  // namespace detail
}  // namespace parascan
