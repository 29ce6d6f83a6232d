// Argument checks shared by the backends, run on the host before anything is launched or written.
// Every failure throws parascan::error naming the argument and what was expected.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "error.hpp"
#include "inputs.hpp"
#include "layout.hpp"
#include "operator_traits.hpp"
#include "options.hpp"
#include "outputs.hpp"
#include "overlap.hpp"

namespace parascan {
namespace detail {

/// [lo, hi) byte addresses touched by a view; empty when it has no element.
struct byte_span {
  std::uintptr_t lo = 0, hi = 0;
  bool empty() const { return hi <= lo; }
  bool overlaps(const byte_span& o) const { return !empty() && !o.empty() && lo < o.hi && o.lo < hi; }
};

template <class T>
byte_span span_of(const T* p, index_t n) {
  if (p == nullptr || n <= 0) return {};
  auto lo = reinterpret_cast<std::uintptr_t>(p);
  return {lo, lo + std::uintptr_t(n) * sizeof(T)};
}

/// Total time steps of a view (sum over axis 0 for packed views, else the uniform length).
template <class T>
index_t time_extent(const sequences<T>& v) {
  return v.packed() ? v.offsets[v.extent[0]] - v.offsets[0] : v.length;
}

template <class T>
byte_span span_of(const sequences<T>& v) {
  if (v.count() == 0 || v.data == nullptr) return {};
  index_t last = (v.extent[1] - 1) * v.stride[1];
  if (v.packed()) {
    if (v.offsets[v.extent[0]] <= v.offsets[0]) return {};
    last += (v.offsets[v.extent[0]] - 1) * v.time_stride;
    return {reinterpret_cast<std::uintptr_t>(v.data + v.offsets[0] * v.time_stride),
            reinterpret_cast<std::uintptr_t>(v.data + last + 1)};
  }
  if (v.length == 0) return {};
  last += (v.extent[0] - 1) * v.stride[0] + (v.length - 1) * v.time_stride;
  return {reinterpret_cast<std::uintptr_t>(v.data), reinterpret_cast<std::uintptr_t>(v.data + last + 1)};
}

/// The name errors give input k of a pack.
inline std::string input_name(int k) { return "inputs[" + std::to_string(k) + "]"; }

/// a * b for non-negative a and b, or -1 when it exceeds `limit`.
inline index_t product_within(index_t a, index_t b, index_t limit) { return a != 0 && b > limit / a ? -1 : a * b; }

/// Whether the farthest element offset of axes of (stride, extent), the sum of stride * (extent - 1), stays
/// within `limit`.
inline bool reach_fits(const std::pair<index_t, index_t>* axes, int n, index_t limit) {
  index_t reach = 0;
  for (int i = 0; i < n; ++i) {
    if (axes[i].second <= 1) continue;
    const index_t term = product_within(axes[i].second - 1, axes[i].first, limit);
    if (term < 0 || reach > limit - term) return false;
    reach += term;
  }
  return true;
}

/// A packed view's offsets checked once in a call: the same array with as many sequences is not walked
/// again (a scan's inputs and outputs mostly share one: 4004 sequences walked three times were a third of
/// the checks' 9 us a call on the H200 machine).
struct checked_offsets {
  const index_t* offsets = nullptr;
  index_t count = -1;
};

/// Checks a view on its own: extents, strides, pointer and (packed) offsets. `offsets` read on the host;
/// `checked` (if given) remembers the last array walked and skips walking it again.
template <class T>
void check_view(const sequences<T>& v, const std::string& name, checked_offsets* checked = nullptr) {
  if (v.extent[0] < 0 || v.extent[1] < 0) fail(name + ".extent", "non-negative batch extents");
  if (v.stride[0] < 0 || v.stride[1] < 0 || v.time_stride < 0)
    fail(name + ".stride", "non-negative strides (a zero stride broadcasts an input)");
  // 64-bit offsets: neither the sequence count nor the farthest byte addressed may wrap.
  const index_t limit = std::numeric_limits<index_t>::max() / index_t(sizeof(T));
  if (product_within(v.extent[0], v.extent[1], limit) < 0)
    fail(name + ".extent", "batch extents whose product fits 64 bits, got " + std::to_string(v.extent[0]) + " x " +
                               std::to_string(v.extent[1]));
  if (v.packed()) {
    const index_t n = v.extent[0];
    if (v.offsets[0] < 0)
      fail(name + ".offsets[0]", "a non-negative first offset, got " + std::to_string(v.offsets[0]));
    if (checked == nullptr || checked->offsets != v.offsets || checked->count != n) {
      for (index_t i = 0; i < n; ++i)
        if (v.offsets[i + 1] < v.offsets[i])
          fail(name + ".offsets[" + std::to_string(i + 1) + "]", "non-decreasing offsets, got " +
                                                                     std::to_string(v.offsets[i + 1]) + " after " +
                                                                     std::to_string(v.offsets[i]));
      if (checked != nullptr) *checked = {v.offsets, n};
    }
  } else {
    if (v.length < 0) fail(name + ".length", "a non-negative length, got " + std::to_string(v.length));
  }
  const std::pair<index_t, index_t> axes[3] = {{v.stride[0], v.packed() ? 1 : v.extent[0]},
                                               {v.stride[1], v.extent[1]},
                                               {v.time_stride, v.packed() ? v.offsets[v.extent[0]] : v.length}};
  const bool fits = reach_fits(axes, 3, limit);
  if (!fits) fail(name + ".stride", "strides and extents whose farthest byte offset fits 64 bits");
  const bool has_elements = v.count() > 0 && time_extent(v) > 0;
  if (v.data == nullptr && has_elements) fail(name + ".data", "a non-null pointer for a non-empty view");
}

/// Whether axes of (stride, extent) never place two elements at one address. Sufficient test: sorted by
/// stride, each axis steps over the whole span of the smaller ones.
inline bool strides_keep_apart(std::pair<index_t, index_t>* axes, int n) {
  std::sort(axes, axes + n);
  index_t covered = 0;  // largest offset reachable through the smaller axes
  for (int i = 0; i < n; ++i) {
    const auto [stride, extent] = axes[i];
    if (extent <= 1) continue;
    if (stride <= covered) return false;
    covered += stride * (extent - 1);
  }
  return true;
}

/// Outputs may not write one element twice.
template <class T>
void check_no_self_overlap(const sequences<T>& v, const std::string& name) {
  std::pair<index_t, index_t> axes[3] = {{v.stride[1], v.extent[1]},
                                         {v.time_stride, v.packed() ? time_extent(v) : v.length},
                                         {v.stride[0], v.packed() ? 1 : v.extent[0]}};
  if (v.count() == 0 || axes[1].second == 0) return;
  if (!strides_keep_apart(axes, 3))
    fail(name + ".stride", "strides that never place two elements at one address (an output cannot broadcast)");
}

/// Inputs must have the output's shape: the same batch extents and the same length of every sequence.
template <class T, class U>
void check_same_shape(const sequences<T>& in, const sequences<U>& out, const std::string& name) {
  if (in.extent[0] != out.extent[0] || in.extent[1] != out.extent[1])
    fail(name + ".extent", "the output's batch extents (" + std::to_string(out.extent[0]) + ", " +
                               std::to_string(out.extent[1]) + "), got (" + std::to_string(in.extent[0]) + ", " +
                               std::to_string(in.extent[1]) + ")");
  if (in.packed() != out.packed()) fail(name + ".offsets", "packed exactly when the output is packed");
  if (!out.packed()) {
    if (in.length != out.length)
      fail(name + ".length",
           "the output's length " + std::to_string(out.length) + ", got " + std::to_string(in.length));
    return;
  }
  if (in.offsets == out.offsets) return;
  for (index_t i = 0; i <= out.extent[0]; ++i)
    if (in.offsets[i] - in.offsets[0] != out.offsets[i] - out.offsets[0])
      fail(name + ".offsets[" + std::to_string(i) + "]", "the output's sequence lengths");
}

/// The bytes a uniform (not packed) view addresses, axis by axis.
template <class T>
address_set address_set_of(const sequences<T>& v) {
  const auto bytes = [](index_t stride) { return static_cast<std::int64_t>(stride) * std::int64_t(sizeof(T)); };
  return {reinterpret_cast<std::uintptr_t>(v.data),
          sizeof(T),
          {bytes(v.stride[0]), bytes(v.stride[1]), bytes(v.time_stride)},
          {v.extent[0], v.extent[1], v.length, 1, 1}};
}

/// Whether two views share no byte (decided exactly for uniform views, conservatively for packed ones).
template <class T, class U>
bool views_apart(const sequences<T>& a, const sequences<U>& b) {
  return !span_of(a).overlaps(span_of(b)) ||
         (!a.packed() && !b.packed() && shares_bytes(address_set_of(a), address_set_of(b)) == overlap::no);
}

/// An output may alias an input only exactly (in place: same address, element size and strides), or not
/// at all: views whose address ranges interleave without a shared byte (strided, uniform views, decided
/// exactly by overlap.hpp) are apart; packed views, and searches too long to finish, count as shared.
template <class T, class U>
void check_alias(const sequences<T>& in, const sequences<U>& out, const std::string& name,
                 const std::string& out_name) {
  if (!span_of(in).overlaps(span_of(out))) return;
  const bool exact = sizeof(T) == sizeof(U) &&
                     static_cast<const void*>(in.data) == static_cast<const void*>(out.data) &&
                     in.stride[0] == out.stride[0] && in.stride[1] == out.stride[1] &&
                     in.time_stride == out.time_stride && in.offsets == out.offsets;
  if (!exact && !views_apart(in, out))
    fail(out_name, "no overlap with " + name + " other than exact in-place aliasing");
}

/// The bytes an input reads besides its view: a shifted input's per-sequence boundary values.
template <class T>
byte_span extra_reads(const sequences<T>&, index_t) {
  return {};
}
template <class T, class B>
byte_span extra_reads(const shifted_sequences<T, B>& v, index_t count) {
  return span_of(v.boundaries, count);
}

/// A shifted input reads, at step t, what step t + lag writes: it may not alias the output at all, and
/// neither may its per-sequence boundary values.
template <class T, class B, class U>
void check_alias(const shifted_sequences<T, B>& in, const sequences<U>& out, const std::string& name,
                 const std::string& out_name) {
  if (!views_apart(in.view, out)) fail(out_name, "no overlap with " + name + " (a shifted input; not even in place)");
  if (extra_reads(in, out.count()).overlaps(span_of(out))) fail(out_name, "no overlap with " + name + ".boundaries");
}

/// Initial states are read before anything is written, sequence by sequence: they may be the very array
/// the final states go to (streaming: continue where the last call stopped), but may not overlap it
/// otherwise, nor overlap the output (steps written before a later sequence reads its initial state).
inline void check_initial(byte_span initial, byte_span final, byte_span out, const std::string& final_name,
                          const std::string& out_name = "output") {
  if (initial.overlaps(out)) fail("options.initial", "no overlap with " + out_name);
  if (initial.overlaps(final) && (initial.lo != final.lo || initial.hi != final.hi))
    fail("options.initial",
         "either exactly " + final_name + " (states carried from call to call) or no overlap with it");
}

/// The name errors give output k of a scan with `outputs` outputs: "output" for a single one.
inline std::string output_name(int k, int outputs) {
  return outputs == 1 ? std::string("output") : "outputs[" + std::to_string(k) + "]";
}

/// Every check of a prefix scan's arguments. `extra_out` is an extra output (final states) or empty.
/// Several outputs have output 0's shape and share no byte (each may alias an input exactly, in place).
template <class... In, class... Out>
void check_scan_arguments(const input_pack<In...>& in, const output_pack<Out...>& outs, byte_span initial,
                          byte_span extra_out, const std::string& extra_name) {
  constexpr int n = int(sizeof...(Out));
  checked_offsets checked;
  for_each_output(outs, [&](const auto& out, int j) {
    const std::string out_name = output_name(j, n);
    check_initial(initial, extra_out, span_of(out), extra_name, out_name);
    check_view(out, out_name, &checked);
    check_no_self_overlap(out, out_name);
    if (j > 0) check_same_shape(out, outs.head, out_name);
    for_each_output(outs, [&](const auto& other, int i) {
      if (i < j && !views_apart(other, out)) fail(out_name, "no overlap with " + output_name(i, n));
    });
  });
  int k = 0;
  for_each_view(in, [&](const auto& input) {
    const std::string name = input_name(k++);
    const auto& v = underlying(input);
    check_view(v, name, &checked);
    check_same_shape(v, outs.head, name);
    for_each_output(outs, [&](const auto& out, int j) { check_alias(input, out, name, output_name(j, n)); });
    if (span_of(v).overlaps(extra_out)) fail(extra_name, "no overlap with " + name);
    if (extra_reads(input, outs.head.count()).overlaps(extra_out))
      fail(extra_name, "no overlap with " + name + ".boundaries");
  });
  for_each_output(outs, [&](const auto& out, int j) {
    if (span_of(out).overlaps(extra_out))
      fail(extra_name, "no overlap with " + (n == 1 ? "the output" : output_name(j, n)));
  });
}

/// Every check of a reduce scan's arguments: inputs of one shape, results apart from them.
template <class... In>
void check_reduce_arguments(const input_pack<In...>& in, byte_span initial, byte_span result, index_t count) {
  check_initial(initial, result, {}, "result");
  checked_offsets checked;
  int k = 0;
  for_each_view(in, [&](const auto& input) {
    const std::string name = input_name(k++);
    const auto& v = underlying(input);
    check_view(v, name, &checked);
    check_same_shape(v, underlying(in.head), name);
    if (span_of(v).overlaps(result)) fail("result", "no overlap with " + name);
    if (extra_reads(input, count).overlaps(result)) fail("result", "no overlap with " + name + ".boundaries");
  });
  if (result.lo == 0 && count != 0) fail("result", "a non-null pointer for " + std::to_string(count) + " sequences");
}

/// The argument names a recurrence's backward pass reports: its gates, states, upstream gradient and the
/// two gradients it writes.
struct backward_names {
  const char *gates = "gates", *x = "x", *grad_x = "grad_x", *grad_gates = "grad_gates",
             *grad_tokens = "grad_tokens";
};

/// A backward pass's checks, all before it writes anything: every view of the gates' shape, each output
/// apart from the other and from every input (the passes read inputs after writing outputs: no in-place
/// aliasing either), and the per-sequence states apart from the outputs. grad_tokens may be null.
template <class A, class X, class G, class DA, class DB, class Y, class GY>
void check_backward_arguments(const sequences<A>& gates, const sequences<X>& x, const sequences<G>& grad_x,
                              const sequences<DA>& grad_gates, const sequences<DB>* grad_tokens,
                              const backward_options<Y, GY>& opts, const backward_names& names = {}) {
  if (opts.exclusive) fail("options.exclusive", "false: a recurrence's backward takes inclusive forwards");
  const std::string gates_name = names.gates;
  check_view(gates, gates_name);
  const auto input = [&](const auto& v, const std::string& name) {
    check_view(v, name);
    check_same_shape(v, gates, name);
  };
  input(x, names.x), input(grad_x, names.grad_x), input(grad_gates, names.grad_gates);
  check_no_self_overlap(grad_gates, names.grad_gates);
  if (grad_tokens != nullptr) {
    input(*grad_tokens, names.grad_tokens);
    check_no_self_overlap(*grad_tokens, names.grad_tokens);
  }
  const index_t count = gates.count();
  const byte_span initial = span_of(opts.initial, count), grad_final = span_of(opts.grad_final, count),
                  grad_initial = span_of(opts.grad_initial, count);
  const auto output = [&](const auto& out, const std::string& name) {
    if (!views_apart(out, gates)) fail(name, "no overlap with " + gates_name);
    if (!views_apart(out, x)) fail(name, std::string("no overlap with ") + names.x);
    if (!views_apart(out, grad_x)) fail(name, std::string("no overlap with ") + names.grad_x);
    if (span_of(out).overlaps(initial)) fail(name, "no overlap with options.initial");
    if (span_of(out).overlaps(grad_final)) fail(name, "no overlap with options.grad_final");
    if (span_of(out).overlaps(grad_initial)) fail("options.grad_initial", "no overlap with " + name);
  };
  output(grad_gates, names.grad_gates);
  if (grad_tokens != nullptr) {
    output(*grad_tokens, names.grad_tokens);
    if (!views_apart(grad_gates, *grad_tokens))
      fail(names.grad_tokens, std::string("no overlap with ") + names.grad_gates);
  }
  for (const auto& [span, name] : {std::pair{span_of(gates), names.gates}, std::pair{span_of(x), names.x},
                                   std::pair{span_of(grad_x), names.grad_x}, std::pair{initial, "options.initial"},
                                   std::pair{grad_final, "options.grad_final"}})
    if (grad_initial.overlaps(span)) fail("options.grad_initial", std::string("no overlap with ") + name);
}

/// Every check of a backward wrapper's call, before its first pass writes: the arguments (on views whose
/// packed offsets the host can read) and, for the GPU, that every pointer is device memory. grad_tokens
/// may be null (a backward with one gradient output).
/// host_readable and require_backend_memory come with the execution policy's backend (host.hpp, cuda.cuh).
template <class Exec, class A, class X, class G, class DA, class DB, class Y, class GY>
void check_backward_call(const Exec& exec, const sequences<A>& gates, const sequences<X>& x,
                         const sequences<G>& grad_x, const sequences<DA>& grad_gates,
                         const sequences<DB>* grad_tokens, const backward_options<Y, GY>& opts,
                         const backward_names& names = {}) {
  std::vector<index_t> o0, o1, o2, o3, o4;
  const auto& gates_h = host_readable(exec, gates, o0);
  if (grad_tokens != nullptr) {
    const auto tokens_h = host_readable(exec, *grad_tokens, o4);
    check_backward_arguments(gates_h, host_readable(exec, x, o1), host_readable(exec, grad_x, o2),
                             host_readable(exec, grad_gates, o3), &tokens_h, opts, names);
  } else {
    check_backward_arguments(gates_h, host_readable(exec, x, o1), host_readable(exec, grad_x, o2),
                             host_readable(exec, grad_gates, o3), grad_tokens, opts, names);
  }
  const std::string data = ".data";
  if (gates.count() > 0 && time_extent(gates_h) > 0) {
    require_backend_memory(exec, gates.data, names.gates + data);
    require_backend_memory(exec, x.data, names.x + data);
    require_backend_memory(exec, grad_x.data, names.grad_x + data);
    require_backend_memory(exec, grad_gates.data, names.grad_gates + data);
    if (grad_tokens != nullptr) require_backend_memory(exec, grad_tokens->data, names.grad_tokens + data);
  }
  if (gates.count() > 0) {
    require_backend_memory(exec, opts.initial, "options.initial");
    require_backend_memory(exec, opts.grad_final, "options.grad_final");
    require_backend_memory(exec, opts.grad_initial, "options.grad_initial");
  }
}

/// Options every prefix scan checks: an initial state needs an operator that can seed one.
template <class Op>
void check_scan_options(const options<output_t<Op>>& opts) {
  if (opts.initial != nullptr && !can_seed<Op>)
    fail("options.initial", "an operator with seed(output) (its outputs are not its states)");
}

/// Options every reduction checks: no exclusive form, totals go to `result`, not `final`.
template <class Op>
void check_reduce_options(const options<output_t<Op>>& opts) {
  if (opts.exclusive) fail("options.exclusive", "false: a reduction has no exclusive form");
  if (opts.final != nullptr) fail("options.final", "null: reduce_scan writes its totals to `result`");
  check_scan_options<Op>(opts);
}

}  // namespace detail
}  // namespace parascan
