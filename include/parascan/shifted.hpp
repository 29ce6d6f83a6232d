// Shifted inputs: an input whose element at step t is x[t + lag] of its sequence, and a boundary value
// where t + lag falls outside the sequence. A backward pass reads the gates one step ahead (a[t + 1], 0
// past the end) and the forward states one step behind (x[t - 1], the initial state before the start)
// without copying them. Time indices, not scan positions: lag +1 is the next time step in reverse scans
// too.
//
//   parascan::inputs(parascan::shifted(gates, +1), grads)           // a[t + 1], 0 at t = n - 1
//   parascan::shifted(states, -1, x0_per_sequence)                 // x[t - 1], x0[s] at t = 0
//
// A shifted input may not alias the output (not even exactly: step t reads what step t + lag writes).
#pragma once

#include <limits>
#include <type_traits>

#include "layout.hpp"

namespace parascan {

/// One sequence's elements read `lag` steps away: times [lo, hi) come from memory (`base` already points
/// `lag` elements on), the others are `boundary`.
template <class T>
struct shifted_cursor {
  const T* base;
  index_t stride;
  index_t lo, hi;
  T boundary;
  index_t lag;  // base[t] is the sequence's element t + lag
  PARASCAN_HD bool in_memory(index_t t) const { return t >= lo && t < hi; }
  PARASCAN_HD T operator[](index_t t) const { return in_memory(t) ? base[t * stride] : boundary; }
};

/// A view read `lag` steps away (see shifted()); per-sequence boundary values of type B convert to T.
template <class T, class B = T>
struct shifted_sequences {
  using element_type = const T;
  sequences<const T> view;
  index_t lag = 0;
  T boundary{};
  const B* boundaries = nullptr;  // one per sequence, in the backend's memory; null: `boundary` for all

  PARASCAN_HD index_t count() const { return view.count(); }
  PARASCAN_HD index_t length_of(index_t s) const { return view.length_of(s); }
  PARASCAN_HD batch_position position_of(index_t s) const { return view.position_of(s); }
  PARASCAN_HD index_t length_at(batch_position p) const { return view.length_at(p); }
  /// Sequence s, at batch position p (= view.position_of(s)).
  PARASCAN_HD shifted_cursor<T> cursor_at(batch_position p, index_t s) const {
    return placed(view.begin_at(p), view.time_stride, view.length_at(p), s);
  }
  /// The same for a uniform view contiguous in time (the caller has checked), with the stride a constant
  /// (sequences::contiguous_cursor_at).
  PARASCAN_HD shifted_cursor<T> contiguous_cursor_at(batch_position p, index_t s) const {
    return placed(view.contiguous_cursor_at(p).base, 1, view.length, s);
  }
  /// Sequence s's cursor from its element 0 at `begin`, n steps `stride` apart.
  PARASCAN_HD shifted_cursor<T> placed(const T* begin, index_t stride, index_t n, index_t s) const {
    const index_t lo = lag >= 0 ? 0 : (-lag < n ? -lag : n);
    const index_t hi = lag <= 0 ? n : (lag < n ? n - lag : 0);
    return {begin + lag * stride, stride, lo, hi, boundaries != nullptr ? static_cast<T>(boundaries[s]) : boundary,
            lag};
  }
  PARASCAN_HD shifted_cursor<T> cursor_of(index_t s) const { return cursor_at(view.position_of(s), s); }
  PARASCAN_HD T at(index_t s, index_t t) const { return cursor_of(s)[t]; }
};

/// `view` read `lag` steps away: element t of sequence s is view[s][t + lag], `boundary` where t + lag is
/// outside [0, n) (value-initialized by default: zero for arithmetic types; Eigen matrices need one).
template <class T>
shifted_sequences<std::remove_const_t<T>> shifted(const sequences<T>& view, index_t lag,
                                                  const std::remove_const_t<T>& boundary = {}) {
  return {view, lag, boundary, nullptr};
}

/// The same with one boundary value per sequence (`boundaries[s]`, in the backend's memory: device memory
/// for parascan::cuda; converted to the view's element type), e.g. each sequence's initial state as x[-1].
template <class T, class B>
shifted_sequences<std::remove_const_t<T>, B> shifted(const sequences<T>& view, index_t lag, const B* boundaries) {
  return {view, lag, {}, boundaries};
}

/// Per-sequence boundary values where `boundaries` is given, `boundary` for every sequence where it is null
/// (a backward pass's x[-1]: the forward's initial states, or zero).
template <class T, class B>
shifted_sequences<std::remove_const_t<T>, B> shifted(const sequences<T>& view, index_t lag,
                                                     const std::remove_const_t<T>& boundary, const B* boundaries) {
  return {view, lag, boundary, boundaries};
}

/// An input whose every step of sequence s reads values[s] (one per sequence, in the backend's memory), in
/// the shape of `like`: a reduction's result, or its gradient, beside the reduction's inputs. A shifted view
/// that never reaches memory: zero strides over `values` and a lag past every sequence's end.
template <class V, class T>
shifted_sequences<V> per_sequence(const V* values, const sequences<T>& like) {
  const sequences<const V> shape{values, {like.extent[0], like.extent[1]}, {0, 0}, like.length, 0, like.offsets};
  return {shape, std::numeric_limits<index_t>::max(), V{}, values};
}

/// The plain view under an input (for checks of shapes and addresses).
template <class T>
PARASCAN_HD const sequences<T>& underlying(const sequences<T>& v) {
  return v;
}
template <class T, class B>
PARASCAN_HD const sequences<const T>& underlying(const shifted_sequences<T, B>& v) {
  return v.view;
}

}  // namespace parascan
