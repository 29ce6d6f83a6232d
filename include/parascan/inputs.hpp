// Several input sequence batches read in step: element t of sequence s of each one goes to the
// operator's lift(x0, x1, ...). A small tuple of views that works in device code. A pack's type lists
// each input's tag: its element type, or shifted_tag<T> for a shifted input (shifted.hpp).
#pragma once

#include <type_traits>

#include "layout.hpp"
#include "operator_traits.hpp"
#include "shifted.hpp"

namespace parascan {

/// Element tag of a shifted input in a pack (shifted.hpp; B: its per-sequence boundaries' type); a plain
/// input's tag is its element type.
template <class T, class B = T>
struct shifted_tag {};

namespace detail {
template <class Tag>
struct input_traits {
  using view = sequences<const Tag>;
  using cursor = parascan::cursor<const Tag>;
  using element = Tag;
};
template <class T, class B>
struct input_traits<shifted_tag<T, B>> {
  using view = shifted_sequences<T, B>;
  using cursor = shifted_cursor<T>;
  using element = T;
};
/// The tag a view takes in a pack, and the view as the pack holds it.
template <class V>
struct tag_of;
template <class T>
struct tag_of<sequences<T>> {
  using type = std::remove_const_t<T>;
  static sequences<const type> convert(const sequences<T>& v) { return v; }
};
template <class T, class B>
struct tag_of<shifted_sequences<T, B>> {
  using type = shifted_tag<T, B>;
  static const shifted_sequences<T, B>& convert(const shifted_sequences<T, B>& v) { return v; }
};
}  // namespace detail

/// What an input of tag H is in a pack (its view), once bound to a sequence (its cursor), and its element.
template <class H>
using input_view_t = typename detail::input_traits<H>::view;
template <class H>
using input_cursor_t = typename detail::input_traits<H>::cursor;
template <class H>
using input_element_t = typename detail::input_traits<H>::element;

template <class... T>
struct input_pack;

template <>
struct input_pack<> {
  static constexpr int size = 0;
};

template <class H, class... R>
struct input_pack<H, R...> {
  static constexpr int size = 1 + sizeof...(R);
  input_view_t<H> head;
  input_pack<R...> tail;
};

namespace detail {
/// The smallest (`Widest` false: 16 for none) or largest (`Widest`: 0 for none) element size among a
/// pack's inputs.
template <bool Widest, class... T>
PARASCAN_HD constexpr int extreme_input(const input_pack<T...>*) {
  const int sizes[] = {int(sizeof(input_element_t<T>))..., 0};  // the 0 keeps an empty pack's array legal
  int bytes = Widest ? 0 : 16;
  for (int k = 0; k < int(sizeof...(T)); ++k)
    if (Widest ? sizes[k] > bytes : sizes[k] < bytes) bytes = sizes[k];
  return bytes;
}
template <class Pack>
PARASCAN_HD constexpr int narrowest_input_bytes() {
  return extreme_input<false>(static_cast<const Pack*>(nullptr));
}
template <class Pack>
PARASCAN_HD constexpr int widest_input_bytes() {
  return extreme_input<true>(static_cast<const Pack*>(nullptr));
}
/// Bytes a step of a pack's inputs, all of them.
template <class... T>
PARASCAN_HD constexpr int input_bytes(const input_pack<T...>*) {
  return (0 + ... + int(sizeof(input_element_t<T>)));
}
template <class Pack>
PARASCAN_HD constexpr int input_bytes_per_step() {
  return input_bytes(static_cast<const Pack*>(nullptr));
}

inline input_pack<> make_pack() { return {}; }
template <class V, class... R>
input_pack<typename tag_of<V>::type, typename tag_of<R>::type...> make_pack(const V& v, const R&... r) {
  return {tag_of<V>::convert(v), make_pack(r...)};
}
}  // namespace detail

/// Groups input views: `parascan::inputs(gates, tokens)`; a view may be shifted (shifted.hpp).
template <class... V>
auto inputs(const V&... views) {
  return detail::make_pack(views...);
}

/// A single view as a one-element pack; a pack as itself.
template <class T>
input_pack<std::remove_const_t<T>> as_pack(const sequences<T>& v) {
  return detail::make_pack(v);
}
template <class T, class B>
input_pack<shifted_tag<T, B>> as_pack(const shifted_sequences<T, B>& v) {
  return detail::make_pack(v);
}
template <class... T>
const input_pack<T...>& as_pack(const input_pack<T...>& p) {
  return p;
}

/// The pack of f(view, k) for each view k of the pack (f returns a view of the same type).
template <class F>
input_pack<> transform_views(const input_pack<>&, F&&, int = 0) {
  return {};
}
template <class H, class... R, class F>
input_pack<H, R...> transform_views(const input_pack<H, R...>& p, F&& f, int k = 0) {
  return {f(p.head, k), transform_views(p.tail, f, k + 1)};
}

/// Calls f(view) for each view of the pack, in order.
template <class F>
void for_each_view(const input_pack<>&, F&&) {}
template <class H, class... R, class F>
void for_each_view(const input_pack<H, R...>& p, F&& f) {
  f(p.head);
  for_each_view(p.tail, f);
}

/// Cursors on one sequence of every input of a pack (bind(pack, s)), read in step.
template <class... T>
struct cursor_pack;
template <>
struct cursor_pack<> {};
template <class H, class... R>
struct cursor_pack<H, R...> {
  input_cursor_t<H> head;
  cursor_pack<R...> tail;
};

PARASCAN_HD inline cursor_pack<> bind(const input_pack<>&, index_t) { return {}; }
template <class H, class... R>
PARASCAN_HD PARASCAN_INLINE cursor_pack<H, R...> bind(const input_pack<H, R...>& p, index_t s) {
  return {p.head.cursor_of(s), bind(p.tail, s)};
}
/// The same, every view placed from one batch position p of sequence s (one division for the pack).
PARASCAN_HD inline cursor_pack<> bind_at(const input_pack<>&, batch_position, index_t) { return {}; }
template <class H, class... R>
PARASCAN_HD PARASCAN_INLINE cursor_pack<H, R...> bind_at(const input_pack<H, R...>& p, batch_position at, index_t s) {
  return {p.head.cursor_at(at, s), bind_at(p.tail, at, s)};
}

/// The state lifted from element t of every input's bound sequence.
template <class Op, class... Read>
PARASCAN_HD PARASCAN_INLINE state_t<Op> lift_at(const Op& op, const cursor_pack<>&, index_t, const Read&... read) {
  return lift(op, read...);
}
template <class Op, class H, class... R, class... Read>
PARASCAN_HD PARASCAN_INLINE state_t<Op> lift_at(const Op& op, const cursor_pack<H, R...>& c, index_t t,
                                                  const Read&... read) {
  return lift_at(op, c.tail, t, read..., c.head[t]);
}

/// Whether the operator has an epilogue emit(state, x...) for the elements of a pack's inputs.
template <class Op, class Pack>
struct emits_for;
template <class Op, class... T>
struct emits_for<Op, input_pack<T...>> : std::bool_constant<emits<Op, input_element_t<T>...>> {};
template <class Op, class... T>
struct emits_for<Op, cursor_pack<T...>> : std::bool_constant<emits<Op, input_element_t<T>...>> {};

/// What is written at element t of the bound sequences, from the scan state `s` there: emit(op, s,
/// elements at t...) (which reads the inputs again only when the operator has an emit()).
template <class Op, class... Read>
PARASCAN_HD PARASCAN_INLINE auto emit_at(const Op& op, const state_t<Op>& s, const cursor_pack<>&, index_t,
                                         const Read&... read) {
  return emit(op, s, read...);
}
template <class Op, class H, class... R, class... Read>
PARASCAN_HD PARASCAN_INLINE auto emit_at(const Op& op, const state_t<Op>& s, const cursor_pack<H, R...>& c, index_t t,
                                         const Read&... read) {
  if constexpr (emits_for<Op, cursor_pack<H, R...>>::value || sizeof...(Read) > 0)
    return emit_at(op, s, c.tail, t, read..., c.head[t]);
  else
    return project(op, s);
}

/// The state lifted from element t of sequence s of every input.
template <class Op, class... Read>
PARASCAN_HD PARASCAN_INLINE state_t<Op> lift_at(const Op& op, const input_pack<>&, index_t, index_t,
                                                  const Read&... read) {
  return lift(op, read...);
}
template <class Op, class H, class... R, class... Read>
PARASCAN_HD PARASCAN_INLINE state_t<Op> lift_at(const Op& op, const input_pack<H, R...>& p, index_t s, index_t t,
                                                  const Read&... read) {
  return lift_at(op, p.tail, s, t, read..., p.head.at(s, t));
}

}  // namespace parascan
