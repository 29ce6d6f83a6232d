// Sequence batches: where the elements of N independent sequences live. Kernels and loops ask a view for
// addresses; they never compute strides themselves.
//
// A view has two batch axes (extents n0 x n1, strides s0, s1) and a time axis (length T, stride ts), in
// elements, 64-bit. Sequence number s = i0 * n1 + i1 (row-major over the batch axes). Element t of
// sequence s lives at data + i0*s0 + i1*s1 + t*ts.
//
// Packed variable-length batches (`cu_seqlens`): axis 0 lists N sequences of a flat buffer through an
// offsets array of N+1 non-decreasing entries, in time steps. Sequence i0 covers time steps
// [offsets[i0], offsets[i0+1]) of the buffer; axis 1 (channels) works as above; s0 is unused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "config.hpp"
#include "error.hpp"

namespace parascan {

/// One sequence's elements: base address and time stride (what loops use once the sequence is known).
template <class T>
struct cursor {
  T* base;
  index_t stride;
  PARASCAN_HD T& operator[](index_t t) const { return base[t * stride]; }
};

/// Where sequence s sits on the batch axes: s = i0 * n1 + i1. Every view of a call has the same batch
/// extents (the entry points check), so a kernel may place all of them from one division.
struct batch_position {
  index_t i0, i1;
};

template <class T>
struct sequences {
  using element_type = T;

  T* data = nullptr;
  index_t extent[2] = {1, 1};  // batch extents: n0 (sequences, or packed sequences), n1 (channels)
  index_t stride[2] = {0, 0};  // batch strides, in elements
  index_t length = 0;          // time steps per sequence (uniform layouts)
  index_t time_stride = 1;     // in elements
  const index_t* offsets = nullptr;  // packed layouts: n0 + 1 entries, else null

  PARASCAN_HD index_t count() const { return extent[0] * extent[1]; }
  PARASCAN_HD bool packed() const { return offsets != nullptr; }
  PARASCAN_HD batch_position position_of(index_t s) const {
    const index_t i0 = s / extent[1];
    return {i0, s - i0 * extent[1]};
  }
  PARASCAN_HD index_t length_at(batch_position p) const {
    return offsets == nullptr ? length : offsets[p.i0 + 1] - offsets[p.i0];
  }
  /// (Uniform layouts: no division.)
  PARASCAN_HD index_t length_of(index_t s) const { return offsets == nullptr ? length : length_at(position_of(s)); }
  /// Address of element 0 of the sequence at p (begin_of: of sequence s).
  PARASCAN_HD T* begin_at(batch_position p) const {
    const index_t first = offsets == nullptr ? p.i0 * stride[0] : offsets[p.i0] * time_stride;
    return data + first + p.i1 * stride[1];
  }
  PARASCAN_HD T* begin_of(index_t s) const { return begin_at(position_of(s)); }
  PARASCAN_HD T& at(index_t s, index_t t) const { return begin_of(s)[t * time_stride]; }
  PARASCAN_HD parascan::cursor<T> cursor_of(index_t s) const { return {begin_of(s), time_stride}; }
  /// (The sequence number is unused here; shifted_sequences::cursor_at needs it for per-sequence boundaries.)
  PARASCAN_HD parascan::cursor<T> cursor_at(batch_position p, index_t) const { return {begin_at(p), time_stride}; }
  /// The same for a uniform view contiguous in time (the caller has checked: no offsets, time stride 1),
  /// with the stride a constant that the vector paths' tests fold on.
  PARASCAN_HD parascan::cursor<T> contiguous_cursor_at(batch_position p) const {
    return {data + p.i0 * stride[0] + p.i1 * stride[1], 1};
  }
  /// (As cursor_at's: the sequence number serves shifted_sequences::contiguous_cursor_at.)
  PARASCAN_HD parascan::cursor<T> contiguous_cursor_at(batch_position p, index_t) const {
    return contiguous_cursor_at(p);
  }

  /// Whether every sequence starts on a multiple of `bytes` (the base, and the stride of each batch axis
  /// with more than one sequence; never claimed for packed layouts).
  bool starts_aligned_to(std::size_t bytes) const {
    const auto fits = [&](int axis) {
      const index_t e = stride[axis] < 0 ? -stride[axis] : stride[axis];
      return extent[axis] <= 1 || std::size_t(e) * sizeof(T) % bytes == 0;
    };
    return offsets == nullptr && reinterpret_cast<std::uintptr_t>(data) % bytes == 0 && fits(0) && fits(1);
  }

  /// The same sequences, read-only.
  template <class U = T, std::enable_if_t<std::is_same<U, T>::value && !std::is_const<U>::value, int> = 0>
  operator sequences<const U>() const {
    return {data, {extent[0], extent[1]}, {stride[0], stride[1]}, length, time_stride, offsets};
  }
};

/// The longest of sequences [s0, s1) of a view (host offsets): each packed sequence's channels share its
/// length, so this walks the packed sequences the range touches, not every channel (one division a call;
/// walking on from the previous range instead measured no faster: 8008 groups of 32 in 28 against 31 us).
template <class T>
index_t longest_in(const sequences<T>& v, index_t s0, index_t s1) {
  if (!v.packed() || s1 <= s0) return s1 > s0 ? v.length : 0;
  index_t longest = 0;
  const index_t first = s0 / v.extent[1];
  for (index_t i = first, channel = first * v.extent[1]; channel < s1; ++i, channel += v.extent[1]) {
    const index_t length = v.offsets[i + 1] - v.offsets[i];
    longest = length > longest ? length : longest;
  }
  return longest;
}

/// Calls visit(g, longest) for every group g of `group_size` consecutive sequences (g * group_size, ...)
/// whose longest sequence has more than `threshold` steps, in increasing g, with that longest. One pass
/// over a packed view's sequences, not over its groups: a batch of many short sequences and a few long
/// ones costs a read of its offsets.
template <class T, class Visit>
void groups_longer_than(const sequences<T>& v, index_t group_size, index_t threshold, Visit&& visit) {
  const index_t count = v.count();
  if (count == 0) return;
  if (!v.packed()) {
    if (v.length > threshold)
      for (index_t g = 0; g * group_size < count; ++g) visit(g, v.length);
    return;
  }
  const index_t D = v.extent[1];  // the channels of a packed sequence, consecutive sequences of the batch
  index_t group = -1, longest = 0;
  for (index_t i = 0; i < v.extent[0]; ++i) {
    const index_t length = v.offsets[i + 1] - v.offsets[i];
    if (length <= threshold) continue;
    for (index_t g = i * D / group_size; g <= ((i + 1) * D - 1) / group_size; ++g) {
      if (g == group) {  // a group shared with the previous long sequence
        longest = length > longest ? length : longest;
        continue;
      }
      if (group >= 0) visit(group, longest);
      group = g;
      longest = length;
    }
  }
  if (group >= 0) visit(group, longest);
}

/// One sequence of n elements, `stride` apart.
template <class T>
sequences<T> single(T* data, index_t n, index_t stride = 1) {
  return {data, {1, 1}, {0, 0}, n, stride, nullptr};
}

/// A (B, D, T) batch, time contiguous: B*D sequences of T steps.
template <class T>
sequences<T> bdt(T* data, index_t B, index_t D, index_t T_) {
  return {data, {B, D}, {D * T_, T_}, T_, 1, nullptr};
}

/// A (B, T, D) batch, channels contiguous: B*D sequences of T steps, D apart.
template <class T>
sequences<T> btd(T* data, index_t B, index_t T_, index_t D) {
  return {data, {B, D}, {T_ * D, 1}, T_, D, nullptr};
}

/// Any strided view: extents (n0, n1), strides (s0, s1), T steps `time_stride` apart. A zero stride on an
/// input broadcasts it (one gate for every step, say); outputs must not overlap themselves.
template <class T>
sequences<T> strided(T* data, index_t n0, index_t n1, index_t s0, index_t s1, index_t T_, index_t time_stride) {
  return {data, {n0, n1}, {s0, s1}, T_, time_stride, nullptr};
}

namespace detail {
/// A packed view without its offsets array would read as an empty uniform batch: refused here.
inline const index_t* require_offsets(const index_t* offsets, index_t N) {
  require(offsets != nullptr || N == 0, "offsets", "a non-null offsets array of N + 1 entries for a packed batch");
  return offsets;
}
}  // namespace detail

/// Packed variable-length batch, time-major (total, D) buffer: N sequences of D channels;
/// sequence i spans rows [offsets[i], offsets[i+1]). `offsets` has N + 1 entries.
template <class T>
sequences<T> packed_td(T* data, const index_t* offsets, index_t N, index_t D = 1) {
  return {data, {N, D}, {0, 1}, 0, D, detail::require_offsets(offsets, N)};
}

/// Packed variable-length batch, channel-major (D, total) buffer: `total` = offsets[N] time steps per row.
template <class T>
sequences<T> packed_dt(T* data, const index_t* offsets, index_t N, index_t D, index_t total) {
  return {data, {N, D}, {0, total}, 0, 1, detail::require_offsets(offsets, N)};
}

/// Any packed view: channel stride and time stride given.
template <class T>
sequences<T> packed(T* data, const index_t* offsets, index_t N, index_t D, index_t channel_stride,
                    index_t time_stride) {
  return {data, {N, D}, {0, channel_stride}, 0, time_stride, detail::require_offsets(offsets, N)};
}

}  // namespace parascan
