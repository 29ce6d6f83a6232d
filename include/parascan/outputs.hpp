// Several output sequence batches written in step: `parascan::outputs(y0, y1, ...)` in place of one output
// view, and an operator whose emit() returns `parascan::values(v0, v1, ...)`, v_k written to output k at
// the step (converted to its element type). A fused backward pass writes dL/db and dL/da from one scan.
// Small tuples of views, cursors and values that work in device code.
#pragma once

#include <type_traits>

#include "config.hpp"
#include "inputs.hpp"
#include "layout.hpp"
#include "operator_traits.hpp"

namespace parascan {

/// What emit() gives for several outputs: one value per output, in the outputs' order.
template <class... Y>
struct value_pack;
template <>
struct value_pack<> {
  static constexpr int size = 0;
};
template <class H, class... R>
struct value_pack<H, R...> {
  static constexpr int size = 1 + sizeof...(R);
  H head;
  value_pack<R...> tail;
};

/// `return parascan::values(db, da);` from an operator's emit(): db to output 0, da to output 1.
PARASCAN_HD inline value_pack<> values() { return {}; }
template <class H, class... R>
PARASCAN_HD PARASCAN_INLINE value_pack<H, R...> values(const H& head, const R&... rest) {
  return {head, values(rest...)};
}

/// The output views of one scan, all of one shape (output 0's; checked).
template <class... T>
struct output_pack;
template <>
struct output_pack<> {
  static constexpr int size = 0;
};
template <class H, class... R>
struct output_pack<H, R...> {
  static_assert(!std::is_const<H>::value, "parascan: an output view's elements must be writable (not const)");
  static constexpr int size = 1 + sizeof...(R);
  sequences<H> head;
  output_pack<R...> tail;
};

/// Groups output views: `parascan::outputs(grad_tokens, grad_gates)`.
inline output_pack<> outputs() { return {}; }
template <class H, class... R>
output_pack<H, R...> outputs(const sequences<H>& head, const sequences<R>&... rest) {
  return {head, outputs(rest...)};
}

/// A single view as a one-output pack; a pack as itself.
template <class T>
output_pack<T> as_outputs(const sequences<T>& v) {
  return outputs(v);
}
template <class... T>
const output_pack<T...>& as_outputs(const output_pack<T...>& p) {
  return p;
}

/// The pack of f(view, k) for each output view k (f returns a view of the same type).
template <class F>
output_pack<> transform_views(const output_pack<>&, F&&, int = 0) {
  return {};
}
template <class H, class... R, class F>
output_pack<H, R...> transform_views(const output_pack<H, R...>& p, F&& f, int k = 0) {
  return {f(p.head, k), transform_views(p.tail, f, k + 1)};
}

/// Calls f(view, k) for each output view k, in order.
template <class F>
void for_each_output(const output_pack<>&, F&&, int = 0) {}
template <class H, class... R, class F>
void for_each_output(const output_pack<H, R...>& p, F&& f, int k = 0) {
  f(p.head, k);
  for_each_output(p.tail, f, k + 1);
}

/// Cursors on one sequence of every output (bind_outputs(pack, s)).
template <class... T>
struct output_cursors;
template <>
struct output_cursors<> {};
template <class H, class... R>
struct output_cursors<H, R...> {
  cursor<H> head;
  output_cursors<R...> tail;
};

PARASCAN_HD inline output_cursors<> bind_outputs(const output_pack<>&, index_t) { return {}; }
template <class H, class... R>
PARASCAN_HD PARASCAN_INLINE output_cursors<H, R...> bind_outputs(const output_pack<H, R...>& p, index_t s) {
  return {p.head.cursor_of(s), bind_outputs(p.tail, s)};
}
PARASCAN_HD inline output_cursors<> bind_outputs_at(const output_pack<>&, batch_position) { return {}; }
template <class H, class... R>
PARASCAN_HD PARASCAN_INLINE output_cursors<H, R...> bind_outputs_at(const output_pack<H, R...>& p, batch_position at) {
  return {p.head.cursor_at(at, 0), bind_outputs_at(p.tail, at)};
}

namespace detail {
template <class V>
struct is_value_pack : std::false_type {};
template <class... Y>
struct is_value_pack<value_pack<Y...>> : std::true_type {};

/// What emit() gave for the first (or only) output: a value, or a value_pack's first value.
template <class V>
PARASCAN_HD PARASCAN_INLINE const auto& first_value(const V& v) {
  if constexpr (is_value_pack<V>::value)
    return v.head;
  else
    return v;
}

/// How many outputs a value emit() gives fills: a value_pack's size, else 1.
template <class V>
constexpr int values_in(const V*) {
  return 1;
}
template <class... Y>
constexpr int values_in(const value_pack<Y...>*) {
  return int(sizeof...(Y));
}
}  // namespace detail

/// Whether what emit() gives (V) fills exactly the outputs of pack P (one value for one output).
template <class V, class P>
constexpr bool fills_outputs = detail::values_in(static_cast<const std::decay_t<V>*>(nullptr)) == P::size;

/// What an operator's emit() gives for the elements of an input pack's inputs (project() without one).
template <class Op, class Pack>
struct emitted;
template <class Op, class... T>
struct emitted<Op, input_pack<T...>> {
  using type = std::decay_t<decltype(emit(std::declval<const Op&>(), std::declval<const state_t<Op>&>(),
                                          std::declval<const input_element_t<T>&>()...))>;
};

/// Compile-time check that an operator writes exactly the outputs of a scan.
template <class Op, class InPack, class OutPack>
constexpr bool check_outputs() {
  static_assert(fills_outputs<typename emitted<Op, InPack>::type, OutPack>,
                "parascan: emit() must give one value per output: parascan::values(v0, v1, ...) for "
                "parascan::outputs(y0, y1, ...), a single value for a single output view");
  return true;
}

/// Writes what emit() gave at time t of the bound sequences: a value to a single output, value k of a
/// value_pack to output k, each converted to its output's element type.
template <class H, class V>
PARASCAN_HD PARASCAN_INLINE void store_at(const output_cursors<H>& c, index_t t, const V& v) {
  c.head[t] = static_cast<H>(detail::first_value(v));
}
template <class H, class H2, class... R, class... Y>
PARASCAN_HD PARASCAN_INLINE void store_at(const output_cursors<H, H2, R...>& c, index_t t, const value_pack<Y...>& v) {
  c.head[t] = static_cast<H>(v.head);
  store_at(c.tail, t, v.tail);
}

}  // namespace parascan
