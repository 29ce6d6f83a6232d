// parascan's entry points as XLA FFI custom calls, for parascan.jax (jax.ffi.ffi_call): JAX arrays on the
// host and on CUDA devices, under jit, vmap and grad, without copies. XLA hands over row-major contiguous
// buffers. The attribute `dim` (negative: counted from the last axis, so that vmap's leading batch axes
// leave it in place) is the time axis; the axes before it and the axes after it are the view's two batch
// extents, so that sequence s is the C-order index of every other axis, as per-sequence buffers (initial
// and final states, one a sequence) are laid out. Arrays of N-vectors and N x N matrices (the affine
// recurrence, the matrix chains) keep their element's axes last; the time axis counts among the others. Optional buffers come last; attributes say which are
// there. The CPU targets run the host backend (`threads` workers), the CUDA targets the CUDA backend on
// XLA's stream of the current device (when the extension has it). Errors are parascan::error's message,
// raised by JAX; parascan.jax checks shapes and dtypes before it calls.
#include "xla_ffi.hpp"

#include <xla/ffi/api/ffi.h>

#include <cstdint>
#include <exception>
#include <type_traits>
#include <string>

#include "entries.hpp"
#ifndef PARASCAN_PY_CUDA
#define PARASCAN_PY_CUDA 0
#endif
#if PARASCAN_PY_CUDA
#include "entries_gpu.hpp"
#endif

namespace ffi = xla::ffi;
namespace nb = nanobind;
using parascan::index_t;

namespace {

/// One custom call's buffers (inputs, then outputs) and attributes.
struct call {
  ffi::RemainingArgs args;
  ffi::RemainingRets rets;
  ffi::Dictionary attrs;

  ffi::AnyBuffer arg(std::size_t k) const { return value(args.get<ffi::AnyBuffer>(k), "input"); }
  ffi::AnyBuffer ret(std::size_t k) const { return *value(rets.get<ffi::AnyBuffer>(k), "output"); }
  template <class T>
  T attr(const char* name) const {
    return value(attrs.get<T>(name), name);
  }
  bool flag(const char* name) const { return attrs.contains(name) && attr<bool>(name); }

  template <class T>
  static T value(ffi::ErrorOr<T> v, const std::string& what) {
    if (v.has_error()) parascan::detail::fail(what, "a buffer or attribute of the call: " + v.error().message());
    return std::move(v).value();
  }
};

/// The bytes of one of a buffer's elements (a scalar of its dtype; complex: both parts).
index_t scalar_bytes(const ffi::AnyBuffer& b) { return index_t(ffi::ByteWidth(b.element_type())); }

/// The batch extents and length of the time axis of a buffer (all buffers of a scan share them).
struct time_layout {
  index_t outer = 1, steps = 1, inner = 1;
};

/// The layout of a buffer of scalars (element_axes 0), N-vectors (1) or N x N matrices (2, N = its last
/// extent): the element's axes are the last, the time axis `dim` counts among the others.
time_layout layout_of(const ffi::AnyBuffer& b, std::int64_t dim, const char* name, int element_axes = 0) {
  const auto dims = b.dimensions();
  const std::int64_t n = std::int64_t(dims.size()) - element_axes, t = dim < 0 ? dim + n : dim;
  if (t < 0 || t >= n)
    parascan::detail::fail("dim", std::string("an axis of ") + name + " (" + std::to_string(n) +
                                      " axes before its element's), got " + std::to_string(dim));
  time_layout l;
  for (std::int64_t k = 0; k < n; ++k) (k < t ? l.outer : k == t ? l.steps : l.inner) *= index_t(dims[k]);
  return l;
}

/// The parascan view of a row-major buffer laid out as `l`.
template <class T>
parascan::sequences<T> view(const ffi::AnyBuffer& b, const time_layout& l, const char* name) {
  const auto want = l.outer * l.steps * l.inner * index_t(sizeof(T) / scalar_bytes(b));
  if (index_t(b.element_count()) != want)
    parascan::detail::fail(name, "the first input's shape (" + std::to_string(want) + " elements), got " +
                                     std::to_string(b.element_count()));
  return parascan::strided(static_cast<T*>(b.untyped_data()), l.outer, l.inner, l.steps * l.inner, 1, l.steps, l.inner);
}

/// A per-sequence buffer (one value of T a sequence: a scalar, a vector, a matrix), or nullptr where the call
/// has none.
template <class T>
T* per_sequence(const call& c, bool present, std::size_t k, bool output, const time_layout& l, const char* name) {
  if (!present) return nullptr;
  const ffi::AnyBuffer b = output ? c.ret(k) : c.arg(k);
  const index_t want = l.outer * l.inner * index_t(sizeof(T) / scalar_bytes(b));
  if (index_t(b.element_count()) != want)
    parascan::detail::fail(name, std::to_string(want) + " values (one per sequence), got " +
                                     std::to_string(b.element_count()));
  return static_cast<T*>(b.untyped_data());
}

/// Calls f(T{}, layout) for the call's first input (`name`): its element type (every buffer of the call
/// shares it; parascan.jax checks) and the layout that `dim` gives it. The real types, and with Complex16
/// also the complex and 16-bit ones (the linear recurrence's storage types).
template <bool Complex16, class F>
void on_first_input(const call& c, const char* name, F&& f) {
  const ffi::AnyBuffer first = c.arg(0);
  const auto with = [&](auto tag) { f(tag, layout_of(first, c.attr<std::int64_t>("dim"), name)); };
  switch (first.element_type()) {
    case ffi::DataType::F32: return with(float{});
    case ffi::DataType::F64: return with(double{});
    default: break;
  }
  if constexpr (Complex16) switch (first.element_type()) {
      case ffi::DataType::C64: return with(std::complex<float>{});
      case ffi::DataType::C128: return with(std::complex<double>{});
      case ffi::DataType::BF16: return with(Eigen::bfloat16{});
      case ffi::DataType::F16: return with(Eigen::half{});
      default: break;
    }
  parascan::detail::fail(std::string(name) + ".dtype", Complex16 ? "float32, float64, complex64, complex128, "
                                                                   "bfloat16 or float16"
                                                                 : "float32 or float64");
}

/// A forward scan's options: initial (input `initial_at`, where has_initial) and the final states (output
/// 1, where the call has a second output).
template <class Y>
parascan::options<Y> forward_options(const call& c, const time_layout& l, std::size_t initial_at) {
  parascan::options<Y> o;
  o.reverse = c.flag("reverse"), o.exclusive = c.flag("exclusive");
  o.initial = per_sequence<Y>(c, c.flag("has_initial"), initial_at, false, l, "initial");
  o.final = per_sequence<Y>(c, c.rets.size() > 1, 1, true, l, "final");
  return o;
}

/// A backward pass's options: initial and grad_final (inputs from `first`, where has_initial /
/// has_grad_final) and dL/dinitial (output `grad_initial_at`, where the call has it).
template <class Y>
parascan::backward_options<Y> backward_options(const call& c, const time_layout& l, std::size_t first,
                                               std::size_t grad_initial_at) {
  const bool initial = c.flag("has_initial");
  parascan::backward_options<Y> o;
  o.reverse = c.flag("reverse");
  o.initial = per_sequence<Y>(c, initial, first, false, l, "initial");
  o.grad_final = per_sequence<Y>(c, c.flag("has_grad_final"), first + initial, false, l, "grad_final");
  o.grad_initial = per_sequence<Y>(c, c.rets.size() > grad_initial_at, grad_initial_at, true, l, "grad_initial");
  return o;
}

// ---- The entries. Inputs first, then the optional initial (has_initial) and grad_final (has_grad_final);
// outputs first, then the optional final / grad_initial (when the call has one more output).

/// gates, tokens [, initial] -> x [, final]
struct linear_recurrence_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_first_input<true>(c, "gates", [&](auto tag, const time_layout& l) {
      using T = decltype(tag);
      using Acc = pyext::acc_t<T>;
      pyext::linear_recurrence(exec, view<const T>(c.arg(0), l, "gates"), view<const T>(c.arg(1), l, "tokens"),
                               view<T>(c.ret(0), l, "x"), forward_options<Acc>(c, l, 2));
    });
  }
};

/// gates, x, grad_x [, initial] [, grad_final] -> grad_gates, grad_tokens [, grad_initial]
struct linear_recurrence_backward_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_first_input<true>(c, "gates", [&](auto tag, const time_layout& l) {
      using T = decltype(tag);
      using Acc = pyext::acc_t<T>;
      const auto o = backward_options<Acc>(c, l, 3, 2);
      pyext::linear_recurrence_backward(exec, view<const T>(c.arg(0), l, "gates"), view<const T>(c.arg(1), l, "x"),
                                        view<const T>(c.arg(2), l, "grad_x"), view<T>(c.ret(0), l, "grad_gates"),
                                        view<T>(c.ret(1), l, "grad_tokens"), o);
    });
  }
};

/// x [, initial] -> y [, final], for the one-input scans (attribute `kind`: a pyext::scan_kind)
struct real_scan_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_first_input<false>(c, "x", [&](auto tag, const time_layout& l) {
      using T = decltype(tag);
      const auto in = view<const T>(c.arg(0), l, "x");
      const auto out = view<T>(c.ret(0), l, "y");
      const auto o = forward_options<T>(c, l, 1);
      using K = pyext::scan_kind;
      switch (K(c.attr<std::int64_t>("kind"))) {
        case K::cumsum: return pyext::scan<K::cumsum>(exec, in, out, o);
        case K::cumprod: return pyext::scan<K::cumprod>(exec, in, out, o);
        case K::cummax: return pyext::scan<K::cummax>(exec, in, out, o);
        case K::cummin: return pyext::scan<K::cummin>(exec, in, out, o);
        case K::logcumsumexp: return pyext::scan<K::logcumsumexp>(exec, in, out, o);
      }
      parascan::detail::fail("kind", "a scan kind of the extension");
    });
  }
};

/// x, y, grad_y [, initial] [, grad_final] -> grad_x [, grad_initial]
struct logcumsumexp_backward_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_first_input<false>(c, "x", [&](auto tag, const time_layout& l) {
      using T = decltype(tag);
      auto o = backward_options<T>(c, l, 3, 1);
      o.exclusive = c.flag("exclusive");
      pyext::logcumsumexp_backward(exec, view<const T>(c.arg(0), l, "x"), view<const T>(c.arg(1), l, "y"),
                                   view<const T>(c.arg(2), l, "grad_y"), view<T>(c.ret(0), l, "grad_x"), o);
    });
  }
};

/// log_gates, log_tokens [, initial] -> log_x [, final]
struct log_linear_recurrence_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_first_input<false>(c, "log_gates", [&](auto tag, const time_layout& l) {
      using T = decltype(tag);
      pyext::log_linear_recurrence(
          exec, view<const T>(c.arg(0), l, "log_gates"), view<const T>(c.arg(1), l, "log_tokens"),
          view<T>(c.ret(0), l, "log_x"), forward_options<T>(c, l, 2));
    });
  }
};

/// log_gates, log_tokens, log_x, grad_log_x [, initial] [, grad_final]
///   -> grad_log_gates, grad_log_tokens [, grad_initial]
struct log_linear_recurrence_backward_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_first_input<false>(c, "log_gates", [&](auto tag, const time_layout& l) {
      using T = decltype(tag);
      const auto o = backward_options<T>(c, l, 4, 2);
      pyext::log_linear_recurrence_backward(
          exec, view<const T>(c.arg(0), l, "log_gates"), view<const T>(c.arg(1), l, "log_tokens"),
          view<const T>(c.arg(2), l, "log_x"), view<const T>(c.arg(3), l, "grad_log_x"),
          view<T>(c.ret(0), l, "grad_log_gates"), view<T>(c.ret(1), l, "grad_log_tokens"), o);
    });
  }
};

// ---- Matrices (N x N; float32, float64): the element's axes are the buffers' last. The affine recurrence
// has N = 2, 3, 4, 8, 16; the chains any N (below).

/// Calls f(S{}, integral_constant<int, N>{}, layout) for the call's first input (`name`), N x N matrices,
/// and the layout that `dim` gives it.
template <class F>
void on_first_matrices(const call& c, const char* name, F&& f) {
  const ffi::AnyBuffer m = c.arg(0);
  const auto dims = m.dimensions();
  if (dims.size() < 3 || dims[dims.size() - 1] != dims[dims.size() - 2])
    parascan::detail::fail(name, "an array of N x N matrices with a time axis: shape (..., T, ..., N, N)");
  const auto by_size = [&](auto scalar) {
    pyext::with_fixed_size(index_t(dims[dims.size() - 1]), name, [&](auto N) {
      f(scalar, N, layout_of(m, c.attr<std::int64_t>("dim"), name, 2));
    });
  };
  if (m.element_type() == ffi::DataType::F32) return by_size(float{});
  if (m.element_type() == ffi::DataType::F64) return by_size(double{});
  parascan::detail::fail(std::string(name) + ".dtype", "float32 or float64");
}

/// Calls f(integral_constant<chain_order>{}) for the attribute right_to_left.
template <class F>
void dispatch_order(const call& c, F&& f) {
  using parascan::chain_order;
  if (c.flag("right_to_left")) return f(std::integral_constant<chain_order, chain_order::right_to_left>{});
  f(std::integral_constant<chain_order, chain_order::left_to_right>{});
}

/// W, b [, initial] -> x [, final]: x[t] = W[t] x[t-1] + b[t]
struct affine_recurrence_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_first_matrices(c, "W", [&](auto scalar, auto N, const time_layout& l) {
      using S = decltype(scalar);
      using state = pyext::state_vector_of<S, N.value>;
      using V = pyext::vector_of<S, N.value>;
      pyext::affine_recurrence<Exec, S, N.value>(
          exec, view<const pyext::matrix_of<S, N.value>>(c.arg(0), l, "W"), view<const V>(c.arg(1), l, "b"),
          view<V>(c.ret(0), l, "x"), forward_options<state>(c, l, 2));
    });
  }
};

/// W, x, grad_x [, initial] [, grad_final] -> grad_W, grad_b [, grad_initial]
struct affine_recurrence_backward_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_first_matrices(c, "W", [&](auto scalar, auto N, const time_layout& l) {
      using S = decltype(scalar);
      using M = pyext::matrix_of<S, N.value>;
      using V = pyext::vector_of<S, N.value>;
      using state = pyext::state_vector_of<S, N.value>;
      const auto o = backward_options<state>(c, l, 3, 2);
      pyext::affine_recurrence_backward<Exec, S, N.value>(
          exec, view<const M>(c.arg(0), l, "W"), view<const V>(c.arg(1), l, "x"), view<const V>(c.arg(2), l, "grad_x"),
          view<M>(c.ret(0), l, "grad_W"), view<V>(c.ret(1), l, "grad_b"), o);
    });
  }
};

// ---- Matrix chains: the fixed sizes' kernels (N = 2, 3, 4, 8, 16 with exact arithmetic), else the
// runtime-size chains (any N; cuBLAS on the GPU, Eigen on the host), which also multiply float32 matrices
// on tensor cores (attribute `math`: 0 exact, 1 TF32, 2 bf16; GPU). Views, options and entries follow from
// `size`, an integral_constant<int, N> or a run-time N (entries.hpp's overloads), as parascan_ext.cpp's.

parascan::matrix_math math_of(const call& c) {
  const std::int64_t math = c.attrs.contains("math") ? c.attr<std::int64_t>("math") : 0;
  if (math < 0 || math > 2) parascan::detail::fail("math", "0 (exact), 1 (tf32) or 2 (bf16)");
  using parascan::matrix_math;
  return math == 1 ? matrix_math::tf32 : math == 2 ? matrix_math::bf16 : matrix_math::exact;
}

/// Calls f(S{}, size, layout) for the call's matrices (its first input): S float or double; size
/// pyext::with_chain_size's.
template <class F>
void on_chain_matrices(const call& c, F&& f) {
  const ffi::AnyBuffer m = c.arg(0);
  const auto dims = m.dimensions();
  if (dims.size() < 3 || dims[dims.size() - 1] != dims[dims.size() - 2])
    parascan::detail::fail("matrices", "an array of N x N matrices with a time axis: shape (..., T, ..., N, N)");
  const auto by_size = [&](auto scalar) {
    const time_layout l = layout_of(m, c.attr<std::int64_t>("dim"), "matrices", 2);
    pyext::with_chain_size(index_t(dims[dims.size() - 1]), math_of(c), [&](auto size) { f(scalar, size, l); });
  };
  if (m.element_type() == ffi::DataType::F32) return by_size(float{});
  if (m.element_type() == ffi::DataType::F64) return by_size(double{});
  parascan::detail::fail("matrices.dtype", "float32 or float64");
}

/// A buffer of matrices of scalars T laid out as `l`: fixed-size elements, or a runtime-size chain's
/// matrices (row-major, each one's first scalar placed as view() places elements).
template <class T, int N>
auto chain_view(const ffi::AnyBuffer& b, const time_layout& l, const char* name, std::integral_constant<int, N>) {
  using S = std::remove_const_t<T>;
  return view<std::conditional_t<std::is_const<T>::value, const pyext::matrix_of<S, N>, pyext::matrix_of<S, N>>>(
      b, l, name);
}
template <class T>
parascan::matrix_sequences<T> chain_view(const ffi::AnyBuffer& b, const time_layout& l, const char* name, index_t n) {
  const index_t nn = n * n;
  if (index_t(b.element_count()) != l.outer * l.steps * l.inner * nn)
    parascan::detail::fail(name, "the first input's shape (" + std::to_string(l.outer * l.steps * l.inner * nn) +
                                     " elements), got " + std::to_string(b.element_count()));
  return parascan::matrices_at(parascan::strided(static_cast<T*>(b.untyped_data()), l.outer, l.inner,
                                                 l.steps * l.inner * nn, nn, l.steps, l.inner * nn),
                               n, n, parascan::matrix_storage::row_major);
}

/// One matrix a sequence (per_sequence): a fixed-size element, or N x N scalars.
template <class S, int N>
pyext::matrix_of<S, N>* chain_per_sequence(const call& c, bool present, std::size_t k, bool output,
                                           const time_layout& l, const char* name, std::integral_constant<int, N>) {
  return per_sequence<pyext::matrix_of<S, N>>(c, present, k, output, l, name);
}
template <class S>
S* chain_per_sequence(const call& c, bool present, std::size_t k, bool output, time_layout l, const char* name,
                      index_t n) {
  l.inner *= n * n;
  return per_sequence<S>(c, present, k, output, l, name);
}

/// M [, initial] -> the products P [, final], or (attribute product) the whole product R
struct matrix_chain_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_chain_matrices(c, [&](auto scalar, auto size, const time_layout& l) {
      using S = decltype(scalar);
      const bool product = c.flag("product");  // one output: the product (no final states)
      auto o = pyext::chain_options<S, false>(size, math_of(c));
      o.reverse = c.flag("reverse"), o.exclusive = c.flag("exclusive");
      o.initial = chain_per_sequence<S>(c, c.flag("has_initial"), 1, false, l, "initial", size);
      o.final = chain_per_sequence<S>(c, c.rets.size() > 1, 1, true, l, "final", size);
      const auto in = chain_view<const S>(c.arg(0), l, "matrices", size);
      dispatch_order(c, [&](auto order) {
        if (product)
          pyext::matrix_chain_product<order.value, Exec, S>(
              exec, in, chain_per_sequence<S>(c, true, 0, true, l, "result", size), o);
        else
          pyext::matrix_chain<order.value, Exec, S>(exec, in, chain_view<S>(c.ret(0), l, "products", size), o);
      });
    });
  }
};

/// M, P, grad_P [, initial] [, grad_final] -> grad_M [, grad_initial]; with the attribute product:
/// M, grad_R [, initial] -> grad_M [, grad_initial]
struct matrix_chain_backward_entry {
  template <class Exec>
  static void run(const Exec& exec, const call& c) {
    on_chain_matrices(c, [&](auto scalar, auto size, const time_layout& l) {
      using S = decltype(scalar);
      const bool product = c.flag("product"), initial = c.flag("has_initial");  // product: no grad_final
      const std::size_t first = product ? 2 : 3;  // the optional inputs
      auto o = pyext::chain_options<S, true>(size, math_of(c));
      o.reverse = c.flag("reverse");
      o.initial = chain_per_sequence<S>(c, initial, first, false, l, "initial", size);
      o.grad_final = chain_per_sequence<S>(c, c.flag("has_grad_final"), first + initial, false, l, "grad_final", size);
      o.grad_initial = chain_per_sequence<S>(c, c.rets.size() > 1, 1, true, l, "grad_initial", size);
      const auto in = chain_view<const S>(c.arg(0), l, "matrices", size);
      const auto grad_in = chain_view<S>(c.ret(0), l, "grad_matrices", size);
      dispatch_order(c, [&](auto order) {
        if (product)
          pyext::matrix_chain_product_backward<order.value, Exec, S>(
              exec, in, chain_per_sequence<S>(c, true, 1, false, l, "grad_result", size), grad_in, o);
        else
          pyext::matrix_chain_backward<order.value, Exec, S>(
              exec, in, chain_view<const S>(c.arg(1), l, "products", size),
              chain_view<const S>(c.arg(2), l, "grad_products", size), grad_in, o);
      });
    });
  }
};

/// Runs an entry, turning parascan's errors (and any other exception) into XLA's.
template <class Entry, class Exec>
ffi::Error run_entry(const Exec& exec, const call& c) {
  try {
    Entry::run(exec, c);
    return ffi::Error::Success();
  } catch (const parascan::error& e) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, e.what());
  } catch (const std::exception& e) {
    return ffi::Error(ffi::ErrorCode::kInternal, std::string("parascan: ") + e.what());
  }
}

/// The CPU target of an entry: the host backend with the call's `threads` (0: one a hardware thread).
template <class Entry>
XLA_FFI_Error* cpu_target(XLA_FFI_CallFrame* frame) {
  static const auto handler =
      ffi::Ffi::Bind()
          .RemainingArgs()
          .RemainingRets()
          .Attrs<ffi::Dictionary>()
          .To([](ffi::RemainingArgs args, ffi::RemainingRets rets, ffi::Dictionary attrs) {
            const call c{args, rets, attrs};
            const auto threads = attrs.contains("threads") ? attrs.get<std::int64_t>("threads").value() : 0;
            return run_entry<Entry>(parascan::host{unsigned(threads)}, c);
          })
          .release();
  return handler->Call(frame);
}

/// The CUDA target of an entry: the CUDA backend on XLA's stream (an error where the extension has none).
template <class Entry>
XLA_FFI_Error* cuda_target(XLA_FFI_CallFrame* frame) {
  static const auto handler =
      ffi::Ffi::Bind()
          .Ctx<ffi::PlatformStream<void*>>()
          .RemainingArgs()
          .RemainingRets()
          .Attrs<ffi::Dictionary>()
          .To([](void* stream, ffi::RemainingArgs args, ffi::RemainingRets rets, ffi::Dictionary attrs) {
#if PARASCAN_PY_CUDA
            return run_entry<Entry>(pyext::gpu{reinterpret_cast<std::uintptr_t>(stream)}, call{args, rets, attrs});
#else
            (void)stream, (void)args, (void)rets, (void)attrs;
            return ffi::Error(ffi::ErrorCode::kUnimplemented,
                              "parascan: this build of the extension has the host backend only (no nvcc was found "
                              "when it was built): JAX arrays on a GPU need the CUDA backend");
#endif
          })
          .release();
  return handler->Call(frame);
}

template <class Entry>
void add(nb::dict& targets, const char* name) {
  targets[name] = nb::make_tuple(nb::capsule(reinterpret_cast<void*>(&cpu_target<Entry>)),
                                 nb::capsule(reinterpret_cast<void*>(&cuda_target<Entry>)));
}

}  // namespace

nb::dict pyext::xla_targets() {
  nb::dict targets;
  add<linear_recurrence_entry>(targets, "linear_recurrence");
  add<linear_recurrence_backward_entry>(targets, "linear_recurrence_backward");
  add<real_scan_entry>(targets, "scan");
  add<logcumsumexp_backward_entry>(targets, "logcumsumexp_backward");
  add<log_linear_recurrence_entry>(targets, "log_linear_recurrence");
  add<log_linear_recurrence_backward_entry>(targets, "log_linear_recurrence_backward");
  add<affine_recurrence_entry>(targets, "affine_recurrence");
  add<affine_recurrence_backward_entry>(targets, "affine_recurrence_backward");
  add<matrix_chain_entry>(targets, "matrix_chain");
  add<matrix_chain_backward_entry>(targets, "matrix_chain_backward");
  return targets;
}
