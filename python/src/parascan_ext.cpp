// parascan's Python extension (nanobind): the entry points on arrays that speak DLPack, without copies.
// Every function takes its outputs (the Python layer allocates them in the input's framework), the time
// axis `dim`, and per-sequence arrays (initial / final states) in sequence order. Arrays on the host run
// the host backend (`threads` workers); CUDA arrays, when the extension is built with the CUDA backend
// (PARASCAN_PY_CUDA), run it on their own device and on `stream` (a cudaStream_t as an integer, the
// caller's framework's current stream; 0: the legacy default stream). Errors are parascan::error, raised
// in Python as ValueError with parascan's message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <complex>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <parascan/ops/affine_recurrence.hpp>
#include <parascan/ops/matrix_product.hpp>

#include "entries.hpp"
#ifndef PARASCAN_PY_CUDA
#define PARASCAN_PY_CUDA 0
#endif
#if PARASCAN_PY_CUDA
#include "entries_gpu.hpp"
#endif
#ifndef PARASCAN_PY_XLA
#define PARASCAN_PY_XLA 0
#endif
#if PARASCAN_PY_XLA
#include "xla_ffi.hpp"
#endif

namespace nb = nanobind;
using parascan::index_t;

namespace {

using in_array = nb::ndarray<nb::ro>;
using out_array = nb::ndarray<>;

/// The element types the extension dispatches on.
enum class dtype { f32, f64, c64, c128, bf16, f16 };

constexpr nb::dlpack::dtype bfloat16_dtype{std::uint8_t(nb::dlpack::dtype_code::Bfloat), 16, 1};
constexpr nb::dlpack::dtype float16_dtype{std::uint8_t(nb::dlpack::dtype_code::Float), 16, 1};

dtype dtype_of(const nb::dlpack::dtype& d, const std::string& name) {
  if (d == nb::dtype<float>()) return dtype::f32;
  if (d == nb::dtype<double>()) return dtype::f64;
  if (d == nb::dtype<std::complex<float>>()) return dtype::c64;
  if (d == nb::dtype<std::complex<double>>()) return dtype::c128;
  if (d == bfloat16_dtype) return dtype::bf16;
  if (d == float16_dtype) return dtype::f16;
  parascan::detail::fail(name + ".dtype", "float32, float64, complex64, complex128, bfloat16 or float16");
}

/// DLPack's description of an element type of the extension.
template <class T>
nb::dlpack::dtype dlpack_dtype() {
  if constexpr (std::is_same<T, Eigen::bfloat16>::value)
    return bfloat16_dtype;
  else if constexpr (std::is_same<T, Eigen::half>::value)
    return float16_dtype;
  else
    return nb::dtype<T>();
}

/// An element type's name, as NumPy and PyTorch spell it.
template <class T>
const char* dtype_name() {
  if constexpr (std::is_same<T, float>::value)
    return "float32";
  else if constexpr (std::is_same<T, double>::value)
    return "float64";
  else if constexpr (std::is_same<T, std::complex<float>>::value)
    return "complex64";
  else if constexpr (std::is_same<T, std::complex<double>>::value)
    return "complex128";
  else if constexpr (std::is_same<T, Eigen::bfloat16>::value)
    return "bfloat16";
  else
    return "float16";
}

/// The device of the call being made (its first array's): every other array must live there.
struct device_of_call {
  int type = nb::device::cpu::value, id = 0;
};
thread_local device_of_call call_device;

std::string device_name(int type, int id) {
  return type == nb::device::cpu::value    ? std::string("the host")
         : type == nb::device::cuda::value ? "CUDA device " + std::to_string(id)
                                           : "device type " + std::to_string(type);
}

/// An array of the call on the call's device (the host, or the first input's GPU).
template <class A>
void require_on_call_device(const A& a, const std::string& name) {
  if (a.device_type() != call_device.type ||
      (a.device_type() != nb::device::cpu::value && a.device_id() != call_device.id))
    parascan::detail::fail(name, "an array on " + device_name(call_device.type, call_device.id) +
                                     " (the first input's), got one on " + device_name(a.device_type(), a.device_id()));
}

/// Makes a device current for the duration of a call, and the previous one current again after it.
struct device_scope {
#if PARASCAN_PY_CUDA
  int previous;
  explicit device_scope(int device) : previous(pyext::current_device()) {
    if (device != previous) pyext::set_device(device);
  }
  // Restoring may create a context on `previous` (CUDA 12 makes one on cudaSetDevice); errors are
  // ignored here (a destructor), the call's own errors have been raised already.
  ~device_scope() { pyext::restore_device(previous); }
#endif
};

/// Calls f(exec) with the backend of `first`'s device: parascan::host{threads} for host arrays,
/// pyext::gpu{stream} on the array's device for CUDA arrays (when the extension has the CUDA backend).
/// `workspace` (optional): where the GPU's runtime-size chains take their temporaries.
template <class A, class F>
void with_backend(const A& first, const std::string& name, unsigned threads, std::uintptr_t stream, F&& f,
                  pyext::workspace_source* workspace = nullptr) {
  call_device = {first.device_type(), first.device_id()};
  if (first.device_type() == nb::device::cpu::value) return f(parascan::host{threads});
#if PARASCAN_PY_CUDA
  if (first.device_type() == nb::device::cuda::value) {
    device_scope scope(first.device_id());
    return f(pyext::gpu{stream, workspace});
  }
  parascan::detail::fail(name,
                         "a host or CUDA array, got one on " + device_name(first.device_type(), first.device_id()));
#else
  (void)stream, (void)workspace;
  parascan::detail::fail(name, "a host array (this build of the extension has the host backend only), got one on " +
                                   device_name(first.device_type(), first.device_id()));
#endif
}

/// An array's shape and strides (in elements), for planning its view.
struct array_shape {
  std::string name;
  std::vector<index_t> shape, stride;
};
template <class A>
array_shape shape_of(const A& a, const std::string& name) {
  array_shape s{name, {}, {}};
  for (std::size_t k = 0; k < a.ndim(); ++k)
    s.shape.push_back(index_t(a.shape(k))), s.stride.push_back(index_t(a.stride(k)));
  return s;
}

/// How the arrays of one call become parascan views: axis `time_axis` is time, the other axes (in order)
/// are the batch, merged into the view's two batch extents where every array's strides allow (adjacent
/// axes whose outer stride steps over the inner axis), so that sequence s is the C-order index of the
/// batch axes in every array alike.
struct batch_plan {
  int time_axis = 0;
  std::vector<std::vector<int>> groups;  // batch axes (extent > 1) of each of the two extents
  const index_t* offsets = nullptr;      // packed batches: N + 1 offsets along the time axis
  index_t packed_count = 0;              // N
};

/// `cu_seqlens` (optional): the time axis holds N sequences back to back, sequence i at offsets [i, i+1);
/// the other axes are its channels (merged into one strided axis).
batch_plan plan_batch(int dim, const std::vector<array_shape>& arrays,
                      const std::optional<in_array>& cu_seqlens = std::nullopt) {
  const array_shape& first = arrays.front();
  const int ndim = int(first.shape.size());
  for (const array_shape& a : arrays)
    if (a.shape != first.shape) {
      std::string shape;
      for (index_t e : first.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(e);
      parascan::detail::fail(a.name + ".shape", "the shape of " + first.name + " (" + shape + ")");
    }
  if (ndim < 1) parascan::detail::fail(first.name, "an array with at least one axis (the time axis)");
  batch_plan plan;
  plan.time_axis = dim < 0 ? dim + ndim : dim;
  if (plan.time_axis < 0 || plan.time_axis >= ndim)
    parascan::detail::fail(
        "dim", "an axis of " + first.name + " (" + std::to_string(ndim) + " axes), got " + std::to_string(dim));
  for (int k = 0; k < ndim; ++k) {
    if (k == plan.time_axis || first.shape[k] == 1) continue;
    bool merges = !plan.groups.empty();
    for (const array_shape& a : arrays)
      merges = merges && a.stride[plan.groups.back().back()] == a.stride[k] * a.shape[k];
    if (merges)
      plan.groups.back().push_back(k);
    else
      plan.groups.push_back({k});
  }
  if (plan.groups.size() > 2)
    parascan::detail::fail(first.name, "batch axes that merge into two strided ones (make the arrays contiguous)");
  while (plan.groups.size() < 2) plan.groups.insert(plan.groups.begin(), std::vector<int>{});
  if (cu_seqlens) {
    const in_array& o = *cu_seqlens;
    if (o.device_type() != nb::device::cpu::value) parascan::detail::fail("cu_seqlens", "a host array");
    if (o.dtype() != nb::dtype<std::int64_t>() || o.ndim() != 1 || o.shape(0) < 1 || o.stride(0) != 1)
      parascan::detail::fail("cu_seqlens", "a contiguous 1-D int64 array of N + 1 offsets");
    if (!plan.groups[0].empty())
      parascan::detail::fail(first.name,
                             "channel axes (all but dim) that merge into one strided axis, with cu_seqlens");
    plan.offsets = static_cast<const index_t*>(o.data());
    plan.packed_count = index_t(o.shape(0)) - 1;
    const index_t total = first.shape[plan.time_axis];
    for (index_t i = 0; i <= plan.packed_count; ++i)
      if (plan.offsets[i] < 0 || plan.offsets[i] > total)
        parascan::detail::fail(
            "cu_seqlens[" + std::to_string(i) + "]",
            "offsets within axis dim's length " + std::to_string(total) + ", got " + std::to_string(plan.offsets[i]));
  }
  return plan;
}

/// The parascan view of an array (its data and its shape in elements of T) under a plan.
template <class T>
parascan::sequences<T> view_at(const void* p, const array_shape& a, const batch_plan& plan) {
  index_t extent[2] = {1, 1}, stride[2] = {0, 0};
  for (int g = 0; g < 2; ++g)
    for (int k : plan.groups[g]) extent[g] *= a.shape[k], stride[g] = a.stride[k];
  T* data = static_cast<T*>(const_cast<void*>(p));
  if (plan.offsets != nullptr)
    return parascan::packed(data, plan.offsets, plan.packed_count, extent[1], stride[1], a.stride[plan.time_axis]);
  return parascan::strided(data, extent[0], extent[1], stride[0], stride[1], a.shape[plan.time_axis],
                           a.stride[plan.time_axis]);
}
template <class T, class A>
parascan::sequences<T> view_of(const A& a, const batch_plan& plan) {
  return view_at<T>(a.data(), shape_of(a, ""), plan);
}

/// Runs f, naming the arguments in parascan's messages as the Python function does (inputs[k] -> its name).
template <class F>
void named(std::initializer_list<const char*> inputs, F&& f) {
  try {
    f();
  } catch (const parascan::error& e) {
    std::string message = e.what();
    std::size_t k = 0;
    for (const char* input : inputs) {
      const std::string generic = "inputs[" + std::to_string(k++) + "]";
      for (std::size_t at; (at = message.find(generic)) != std::string::npos;)
        message.replace(at, generic.size(), input);
    }
    throw parascan::error(message);
  }
}

/// One value per sequence (initial or final states): a C-contiguous array of `count` elements of T.
template <class T, class A>
T* per_sequence(const std::optional<A>& a, index_t count, const std::string& name) {
  if (!a) return nullptr;
  require_on_call_device(*a, name);
  if (a->dtype() != dlpack_dtype<T>())
    parascan::detail::fail(name + ".dtype", std::string("the scan state's dtype, ") + dtype_name<T>());
  if (index_t(a->size()) != count)
    parascan::detail::fail(name,
                           std::to_string(count) + " values (one per sequence), got " + std::to_string(a->size()));
  index_t expected = 1;
  for (int k = int(a->ndim()) - 1; k >= 0; --k) {
    if (a->shape(k) != 1 && index_t(a->stride(k)) != expected) parascan::detail::fail(name, "a C-contiguous array");
    expected *= index_t(a->shape(k));
  }
  return static_cast<T*>(const_cast<void*>(static_cast<const void*>(a->data())));
}

/// Calls f(T{}) for the element type `d`.
template <class F>
void dispatch_dtype(dtype d, F&& f) {
  switch (d) {
    case dtype::f32: return f(float{});
    case dtype::f64: return f(double{});
    case dtype::c64: return f(std::complex<float>{});
    case dtype::c128: return f(std::complex<double>{});
    case dtype::bf16: return f(Eigen::bfloat16{});
    case dtype::f16: return f(Eigen::half{});
  }
}

/// Calls f(T{}) for the element type of `a` (all arrays of a call share it; checked by the callee).
template <class F>
void dispatch(const in_array& a, const std::string& name, F&& f) {
  dispatch_dtype(dtype_of(a.dtype(), name), f);
}

/// Calls f(T{}) for a float32 or float64 array (the operators with a real accumulator).
template <class F>
void dispatch_real(const in_array& a, const std::string& name, F&& f) {
  switch (dtype_of(a.dtype(), name)) {
    case dtype::f32: return f(float{});
    case dtype::f64: return f(double{});
    default: parascan::detail::fail(name + ".dtype", "float32 or float64");
  }
}

template <class T, class A>
void require_dtype(const A& a, const std::string& name) {
  require_on_call_device(a, name);
  if (a.dtype() != dlpack_dtype<T>()) parascan::detail::fail(name + ".dtype", "the dtype of the first input");
}

template <class T>
parascan::options<T> scan_options(bool reverse, bool exclusive, T* initial, T* final) {
  parascan::options<T> o;
  o.reverse = reverse, o.exclusive = exclusive, o.initial = initial, o.final = final;
  return o;
}

/// A recurrence's backward options from the per-sequence arrays of `count` values of T (each optional).
template <class T>
parascan::backward_options<T> backward_options_of(bool reverse, const std::optional<in_array>& initial,
                                                  const std::optional<in_array>& grad_final,
                                                  const std::optional<out_array>& grad_initial, index_t count) {
  parascan::backward_options<T> o;
  o.reverse = reverse;
  o.initial = per_sequence<T>(initial, count, "initial");
  o.grad_final = per_sequence<T>(grad_final, count, "grad_final");
  o.grad_initial = per_sequence<T>(grad_initial, count, "grad_initial");
  return o;
}

void linear_recurrence(const in_array& gates, const in_array& tokens, const out_array& out, int dim,
                       const std::optional<in_array>& initial, const std::optional<out_array>& final, bool reverse,
                       bool exclusive, const std::optional<in_array>& cu_seqlens, unsigned threads,
                       std::uintptr_t stream) {
  with_backend(gates, "gates", threads, stream, [&](const auto& exec) {
    dispatch(gates, "gates", [&](auto tag) {
      using T = decltype(tag);
      using Acc = pyext::acc_t<T>;
      require_dtype<T>(tokens, "tokens"), require_dtype<T>(out, "out");
      const batch_plan plan =
          plan_batch(dim, {shape_of(gates, "gates"), shape_of(tokens, "tokens"), shape_of(out, "out")}, cu_seqlens);
      const auto x = view_of<T>(out, plan);
      const index_t count = x.count();
      named({"gates", "tokens"}, [&] {
        pyext::linear_recurrence(exec, view_of<const T>(gates, plan), view_of<const T>(tokens, plan), x,
                                 scan_options<Acc>(reverse, exclusive, per_sequence<Acc>(initial, count, "initial"),
                                                   per_sequence<Acc>(final, count, "final")));
      });
    });
  });
}

void linear_recurrence_backward(const in_array& gates, const in_array& x, const in_array& grad_x,
                                const out_array& grad_gates, const out_array& grad_tokens, int dim,
                                const std::optional<in_array>& initial, const std::optional<in_array>& grad_final,
                                const std::optional<out_array>& grad_initial, bool reverse,
                                const std::optional<in_array>& cu_seqlens, unsigned threads, std::uintptr_t stream) {
  with_backend(gates, "gates", threads, stream, [&](const auto& exec) {
    dispatch(gates, "gates", [&](auto tag) {
      using T = decltype(tag);
      using Acc = pyext::acc_t<T>;
      require_dtype<T>(x, "x"), require_dtype<T>(grad_x, "grad_x");
      require_dtype<T>(grad_gates, "grad_gates"), require_dtype<T>(grad_tokens, "grad_tokens");
      const batch_plan plan = plan_batch(dim,
                                         {shape_of(gates, "gates"), shape_of(x, "x"), shape_of(grad_x, "grad_x"),
                                          shape_of(grad_gates, "grad_gates"), shape_of(grad_tokens, "grad_tokens")},
                                         cu_seqlens);
      const auto a = view_of<const T>(gates, plan);
      const auto o = backward_options_of<Acc>(reverse, initial, grad_final, grad_initial, a.count());
      named({"gates", "grad_x", "x"}, [&] {  // the adjoint scan's inputs: gates, grad_x, x one step behind
        pyext::linear_recurrence_backward(exec, a, view_of<const T>(x, plan), view_of<const T>(grad_x, plan),
                                          view_of<T>(grad_gates, plan), view_of<T>(grad_tokens, plan), o);
      });
    });
  });
}

/// The linear recurrence and its backward on C-contiguous (rows, T) arrays given by address, time last:
/// parascan.torch's eager path for plain tensors. A training step of short sequences is host-bound, and
/// DLPack's capsules (the framework's export, nanobind's import) cost it microseconds a call. The caller
/// vouches for the arrays: live, `rows` x `T` elements of the dtype with code `dtype` (the order of the
/// `dtype` enum: float32, float64, complex64, complex128, bfloat16, float16), all on `device` (< 0: host
/// memory, run by the host backend's `threads` workers; else that CUDA device, on `stream`).
template <class F>
void by_address(int code, int device, unsigned threads, std::uintptr_t stream, F&& f) {
  if (code < int(dtype::f32) || code > int(dtype::f16))
    parascan::detail::fail("dtype", "a code from 0 to 5, got " + std::to_string(code));
  const auto run = [&](const auto& exec) { dispatch_dtype(dtype(code), [&](auto tag) { f(exec, tag); }); };
  if (device < 0) return run(parascan::host{threads});
#if PARASCAN_PY_CUDA
  device_scope scope(device);
  run(pyext::gpu{stream});
#else
  (void)stream;
  parascan::detail::fail("device", "host memory (this build of the extension has the host backend only)");
#endif
}
template <class T>
parascan::sequences<T> rows_at(std::uintptr_t address, index_t rows, index_t steps) {
  return parascan::bdt(reinterpret_cast<T*>(address), 1, rows, steps);
}

void linear_recurrence_by_address(std::uintptr_t gates, std::uintptr_t tokens, std::uintptr_t out, index_t rows,
                                  index_t steps, int code, int device, bool reverse, unsigned threads,
                                  std::uintptr_t stream) {
  by_address(code, device, threads, stream, [&](const auto& exec, auto tag) {
    using T = decltype(tag);
    named({"gates", "tokens"}, [&] {
      pyext::linear_recurrence(exec, rows_at<const T>(gates, rows, steps), rows_at<const T>(tokens, rows, steps),
                               rows_at<T>(out, rows, steps),
                               scan_options<pyext::acc_t<T>>(reverse, false, nullptr, nullptr));
    });
  });
}

void linear_recurrence_backward_by_address(std::uintptr_t gates, std::uintptr_t x, std::uintptr_t grad_x,
                                           std::uintptr_t grad_gates, std::uintptr_t grad_tokens, index_t rows,
                                           index_t steps, int code, int device, bool reverse, unsigned threads,
                                           std::uintptr_t stream) {
  by_address(code, device, threads, stream, [&](const auto& exec, auto tag) {
    using T = decltype(tag);
    parascan::backward_options<pyext::acc_t<T>> o;
    o.reverse = reverse;
    named({"gates", "grad_x", "x"}, [&] {
      pyext::linear_recurrence_backward(exec, rows_at<const T>(gates, rows, steps), rows_at<const T>(x, rows, steps),
                                        rows_at<const T>(grad_x, rows, steps), rows_at<T>(grad_gates, rows, steps),
                                        rows_at<T>(grad_tokens, rows, steps), o);
    });
  });
}

/// A one-input scan with a real accumulator (cumsum & co., logcumsumexp): float32 and float64 only.
template <pyext::scan_kind K>
void real_scan(const in_array& x, const out_array& out, int dim, const std::optional<in_array>& initial,
               const std::optional<out_array>& final, bool reverse, bool exclusive,
               const std::optional<in_array>& cu_seqlens, unsigned threads, std::uintptr_t stream) {
  with_backend(x, "x", threads, stream, [&](const auto& exec) {
    dispatch_real(x, "x", [&](auto tag) {
      using T = decltype(tag);
      require_dtype<T>(out, "out");
      const batch_plan plan = plan_batch(dim, {shape_of(x, "x"), shape_of(out, "out")}, cu_seqlens);
      const auto y = view_of<T>(out, plan);
      named({"x"}, [&] {
        pyext::scan<K>(exec, view_of<const T>(x, plan), y,
                       scan_options<T>(reverse, exclusive, per_sequence<T>(initial, y.count(), "initial"),
                                       per_sequence<T>(final, y.count(), "final")));
      });
    });
  });
}

void logcumsumexp_backward(const in_array& x, const in_array& y, const in_array& grad_y, const out_array& grad_x,
                           int dim, const std::optional<in_array>& initial, const std::optional<in_array>& grad_final,
                           const std::optional<out_array>& grad_initial, bool reverse, bool exclusive,
                           const std::optional<in_array>& cu_seqlens, unsigned threads, std::uintptr_t stream) {
  with_backend(x, "x", threads, stream, [&](const auto& exec) {
    dispatch_real(x, "x", [&](auto tag) {
      using T = decltype(tag);
      require_dtype<T>(y, "y"), require_dtype<T>(grad_y, "grad_y"), require_dtype<T>(grad_x, "grad_x");
      const batch_plan plan =
          plan_batch(dim, {shape_of(x, "x"), shape_of(y, "y"), shape_of(grad_y, "grad_y"), shape_of(grad_x, "grad_x")},
                     cu_seqlens);
      const auto dx = view_of<T>(grad_x, plan);
      parascan::backward_options<T> o = backward_options_of<T>(reverse, initial, grad_final, grad_initial, dx.count());
      o.exclusive = exclusive;
      named({"x", "y", "grad_y"}, [&] {
        pyext::logcumsumexp_backward(exec, view_of<const T>(x, plan), view_of<const T>(y, plan),
                                     view_of<const T>(grad_y, plan), dx, o);
      });
    });
  });
}

void log_linear_recurrence(const in_array& log_a, const in_array& log_b, const out_array& out, int dim,
                           const std::optional<in_array>& initial, const std::optional<out_array>& final, bool reverse,
                           bool exclusive, const std::optional<in_array>& cu_seqlens, unsigned threads,
                           std::uintptr_t stream) {
  with_backend(log_a, "log_gates", threads, stream, [&](const auto& exec) {
    dispatch_real(log_a, "log_gates", [&](auto tag) {
      using T = decltype(tag);
      require_dtype<T>(log_b, "log_tokens"), require_dtype<T>(out, "out");
      const batch_plan plan = plan_batch(
          dim, {shape_of(log_a, "log_gates"), shape_of(log_b, "log_tokens"), shape_of(out, "out")}, cu_seqlens);
      const auto x = view_of<T>(out, plan);
      named({"log_gates", "log_tokens"}, [&] {
        pyext::log_linear_recurrence(exec, view_of<const T>(log_a, plan), view_of<const T>(log_b, plan), x,
                                     scan_options<T>(reverse, exclusive, per_sequence<T>(initial, x.count(), "initial"),
                                                     per_sequence<T>(final, x.count(), "final")));
      });
    });
  });
}

void log_linear_recurrence_backward(const in_array& log_a, const in_array& log_b, const in_array& log_x,
                                    const in_array& grad_log_x, const out_array& grad_log_a,
                                    const out_array& grad_log_b, int dim, const std::optional<in_array>& initial,
                                    const std::optional<in_array>& grad_final,
                                    const std::optional<out_array>& grad_initial, bool reverse,
                                    const std::optional<in_array>& cu_seqlens, unsigned threads,
                                    std::uintptr_t stream) {
  with_backend(log_a, "log_gates", threads, stream, [&](const auto& exec) {
    dispatch_real(log_a, "log_gates", [&](auto tag) {
      using T = decltype(tag);
      require_dtype<T>(log_b, "log_tokens"), require_dtype<T>(log_x, "log_x");
      require_dtype<T>(grad_log_x, "grad_log_x"), require_dtype<T>(grad_log_a, "grad_log_gates");
      require_dtype<T>(grad_log_b, "grad_log_tokens");
      const batch_plan plan =
          plan_batch(dim,
                     {shape_of(log_a, "log_gates"), shape_of(log_b, "log_tokens"), shape_of(log_x, "log_x"),
                      shape_of(grad_log_x, "grad_log_x"), shape_of(grad_log_a, "grad_log_gates"),
                      shape_of(grad_log_b, "grad_log_tokens")},
                     cu_seqlens);
      const auto la = view_of<const T>(log_a, plan);
      const auto o = backward_options_of<T>(reverse, initial, grad_final, grad_initial, la.count());
      // The adjoint scan's inputs: log a, log x, log x one step behind, log b, grad_log_x.
      named({"log_gates", "log_x", "log_x", "log_tokens", "grad_log_x"}, [&] {
        pyext::log_linear_recurrence_backward(exec, la, view_of<const T>(log_b, plan), view_of<const T>(log_x, plan),
                                              view_of<const T>(grad_log_x, plan), view_of<T>(grad_log_a, plan),
                                              view_of<T>(grad_log_b, plan), o);
      });
    });
  });
}

// ---- Matrices: W, products (N x N) and vectors (N) as Eigen fixed-size elements ----------------------
// An array of matrices is (..., T, ..., N, N), of vectors (..., T, ..., N): its last two (one) axes hold
// one element, row-major and contiguous; `dim` counts among the other axes. Elements are unaligned Eigen
// types (any address a NumPy view may have).

using pyext::matrix_of;
using pyext::state_vector_of;
using pyext::vector_of;

/// The shape of an array of N x N (element_axes = 2) or N (1) elements, strides in whole elements.
template <class A>
array_shape element_shape_of(const A& a, const std::string& name, int element_axes, index_t n) {
  const int ndim = int(a.ndim());
  if (ndim < element_axes + 1)
    parascan::detail::fail(name, "an array of " + std::string(element_axes == 2 ? "N x N matrices" : "N-vectors") +
                                     " with a time axis: shape (..., T, ..." +
                                     (element_axes == 2 ? ", N, N)" : ", N)"));
  index_t expected = 1;
  for (int k = ndim - 1; k >= ndim - element_axes; --k) {
    if (index_t(a.shape(k)) != n)
      parascan::detail::fail(name + ".shape", "N = " + std::to_string(n) + " on its last " +
                                                  std::to_string(element_axes) + " axes (the first input's N)");
    if (n > 1 && index_t(a.stride(k)) != expected)
      parascan::detail::fail(name, "contiguous elements (its last axes C-contiguous)");
    expected *= n;
  }
  array_shape s{name, {}, {}};
  for (int k = 0; k < ndim - element_axes; ++k) {
    if (a.shape(k) > 1 && index_t(a.stride(k)) % expected != 0)
      parascan::detail::fail(name + ".stride", "strides in whole elements");
    s.shape.push_back(index_t(a.shape(k))), s.stride.push_back(index_t(a.stride(k)) / expected);
  }
  return s;
}

// ---- The signed log-space recurrence: x as (log|x|, sign) pairs, an array of the tokens' shape + (2,) ----

/// The shape of an array of (log|x|, sign) pairs (its last axis, of 2) in whole pairs.
template <class A>
array_shape signed_log_shape_of(const A& a, const std::string& name) {
  if (a.ndim() < 2 || a.shape(a.ndim() - 1) != 2)
    parascan::detail::fail(name + ".shape", "(log|x|, sign) pairs: the tokens' shape + (2,)");
  return element_shape_of(a, name, 1, 2);
}

void signed_log_linear_recurrence(const in_array& log_a, const in_array& b, const out_array& out, int dim,
                                  const std::optional<in_array>& initial, const std::optional<out_array>& final,
                                  bool reverse, bool exclusive, const std::optional<in_array>& cu_seqlens,
                                  unsigned threads, std::uintptr_t stream) {
  with_backend(log_a, "log_gates", threads, stream, [&](const auto& exec) {
    dispatch_real(log_a, "log_gates", [&](auto tag) {
      using T = decltype(tag);
      using Y = parascan::ops::signed_log<T>;
      require_dtype<T>(b, "tokens"), require_dtype<T>(out, "out");
      const array_shape sx = signed_log_shape_of(out, "out");
      const batch_plan plan = plan_batch(dim, {shape_of(log_a, "log_gates"), shape_of(b, "tokens"), sx}, cu_seqlens);
      const auto x = view_at<Y>(out.data(), sx, plan);
      const index_t values = x.count() * 2;  // a pair a sequence
      parascan::options<Y> o;
      o.reverse = reverse, o.exclusive = exclusive;
      o.initial = reinterpret_cast<const Y*>(per_sequence<T>(initial, values, "initial"));
      o.final = reinterpret_cast<Y*>(per_sequence<T>(final, values, "final"));
      named({"log_gates", "tokens"}, [&] {
        pyext::signed_log_linear_recurrence(exec, view_of<const T>(log_a, plan), view_of<const T>(b, plan), x, o);
      });
    });
  });
}

void signed_log_linear_recurrence_backward(const in_array& log_a, const in_array& b, const in_array& x,
                                           const in_array& grad_log_abs_x, const out_array& grad_log_a,
                                           const out_array& grad_b, int dim, const std::optional<in_array>& initial,
                                           const std::optional<in_array>& grad_final,
                                           const std::optional<out_array>& grad_initial, bool reverse,
                                           const std::optional<in_array>& cu_seqlens, unsigned threads,
                                           std::uintptr_t stream) {
  with_backend(log_a, "log_gates", threads, stream, [&](const auto& exec) {
    dispatch_real(log_a, "log_gates", [&](auto tag) {
      using T = decltype(tag);
      using Y = parascan::ops::signed_log<T>;
      require_dtype<T>(b, "tokens"), require_dtype<T>(x, "x"), require_dtype<T>(grad_log_abs_x, "grad_log_abs_x");
      require_dtype<T>(grad_log_a, "grad_log_gates"), require_dtype<T>(grad_b, "grad_tokens");
      const array_shape sx = signed_log_shape_of(x, "x");
      const batch_plan plan = plan_batch(
          dim,
          {shape_of(log_a, "log_gates"), shape_of(b, "tokens"), sx, shape_of(grad_log_abs_x, "grad_log_abs_x"),
           shape_of(grad_log_a, "grad_log_gates"), shape_of(grad_b, "grad_tokens")},
          cu_seqlens);
      const auto la = view_of<const T>(log_a, plan);
      parascan::backward_options<Y, T> o;
      o.reverse = reverse;
      o.initial = reinterpret_cast<const Y*>(per_sequence<T>(initial, la.count() * 2, "initial"));
      o.grad_final = per_sequence<T>(grad_final, la.count(), "grad_final");
      o.grad_initial = per_sequence<T>(grad_initial, la.count(), "grad_initial");
      // The adjoint scan's inputs: log a, x, x one step behind, b, grad_log_abs_x.
      named({"log_gates", "x", "x", "tokens", "grad_log_abs_x"}, [&] {
        pyext::signed_log_linear_recurrence_backward(exec, la, view_of<const T>(b, plan),
                                                     view_at<const Y>(x.data(), sx, plan),
                                                     view_of<const T>(grad_log_abs_x, plan),
                                                     view_of<T>(grad_log_a, plan), view_of<T>(grad_b, plan), o);
      });
    });
  });
}

/// Calls f(S{}, integral_constant<N>) for a float32/float64 array of N x N matrices (N from its last axis).
template <class F>
void dispatch_matrix(const in_array& m, const std::string& name, F&& f) {
  if (m.ndim() < 3)
    parascan::detail::fail(name, "an array of N x N matrices with a time axis: shape (..., T, ..., N, N)");
  const index_t n = index_t(m.shape(m.ndim() - 1));
  const auto by_size = [&](auto scalar) { pyext::with_fixed_size(n, name, [&](auto N) { f(scalar, N); }); };
  if (m.dtype() == nb::dtype<float>()) return by_size(float{});
  if (m.dtype() == nb::dtype<double>()) return by_size(double{});
  parascan::detail::fail(name + ".dtype", "float32 or float64");
}

void affine_recurrence(const in_array& W, const in_array& b, const out_array& out, int dim,
                       const std::optional<in_array>& initial, const std::optional<out_array>& final, bool reverse,
                       bool exclusive, unsigned threads, std::uintptr_t stream) {
  with_backend(W, "W", threads, stream, [&](const auto& exec) {
    dispatch_matrix(W, "W", [&](auto scalar, auto N) {
      using S = decltype(scalar);
      using M = matrix_of<S, N.value>;
      using V = vector_of<S, N.value>;
      using state_vector = state_vector_of<S, N.value>;
      require_dtype<S>(b, "b"), require_dtype<S>(out, "out");
      const array_shape sw = element_shape_of(W, "W", 2, N), sb = element_shape_of(b, "b", 1, N),
                        sx = element_shape_of(out, "out", 1, N);
      const batch_plan plan = plan_batch(dim, {sw, sb, sx});
      const auto x = view_at<V>(out.data(), sx, plan);
      parascan::options<state_vector> o;
      o.reverse = reverse, o.exclusive = exclusive;
      o.initial = reinterpret_cast<const state_vector*>(per_sequence<S>(initial, x.count() * N, "initial"));
      o.final = reinterpret_cast<state_vector*>(per_sequence<S>(final, x.count() * N, "final"));
      named({"W", "b"}, [&] {
        pyext::affine_recurrence<std::decay_t<decltype(exec)>, S, N.value>(exec, view_at<const M>(W.data(), sw, plan),
                                                                           view_at<const V>(b.data(), sb, plan), x, o);
      });
    });
  });
}

void affine_recurrence_backward(const in_array& W, const in_array& x, const in_array& grad_x, const out_array& grad_W,
                                const out_array& grad_b, int dim, const std::optional<in_array>& initial,
                                const std::optional<in_array>& grad_final, const std::optional<out_array>& grad_initial,
                                bool reverse, unsigned threads, std::uintptr_t stream) {
  with_backend(W, "W", threads, stream, [&](const auto& exec) {
    dispatch_matrix(W, "W", [&](auto scalar, auto N) {
      using S = decltype(scalar);
      using M = matrix_of<S, N.value>;
      using V = vector_of<S, N.value>;
      using state_vector = state_vector_of<S, N.value>;
      require_dtype<S>(x, "x"), require_dtype<S>(grad_x, "grad_x");
      require_dtype<S>(grad_W, "grad_W"), require_dtype<S>(grad_b, "grad_b");
      const array_shape sw = element_shape_of(W, "W", 2, N), sx = element_shape_of(x, "x", 1, N),
                        sg = element_shape_of(grad_x, "grad_x", 1, N), sdw = element_shape_of(grad_W, "grad_W", 2, N),
                        sdb = element_shape_of(grad_b, "grad_b", 1, N);
      const batch_plan plan = plan_batch(dim, {sw, sx, sg, sdw, sdb});
      const auto w = view_at<const M>(W.data(), sw, plan);
      const index_t values = w.count() * N;
      parascan::backward_options<state_vector> o;
      o.reverse = reverse;
      o.initial = reinterpret_cast<const state_vector*>(per_sequence<S>(initial, values, "initial"));
      o.grad_final = reinterpret_cast<const state_vector*>(per_sequence<S>(grad_final, values, "grad_final"));
      o.grad_initial = reinterpret_cast<state_vector*>(per_sequence<S>(grad_initial, values, "grad_initial"));
      pyext::affine_recurrence_backward<std::decay_t<decltype(exec)>, S, N.value>(
          exec, w, view_at<const V>(x.data(), sx, plan), view_at<const V>(grad_x.data(), sg, plan),
          view_at<M>(grad_W.data(), sdw, plan), view_at<V>(grad_b.data(), sdb, plan), o);
    });
  });
}

/// Calls f(integral_constant<chain_order>) for the product order.
template <class F>
void dispatch_order(bool right_to_left, F&& f) {
  if (right_to_left) return f(std::integral_constant<parascan::chain_order, parascan::chain_order::right_to_left>{});
  f(std::integral_constant<parascan::chain_order, parascan::chain_order::left_to_right>{});
}

// ---- Matrix chains: the fixed sizes' kernels (N = 2, 3, 4, 8, 16, exact arithmetic), else the runtime-size
// chains (any N; cuBLAS on the GPU, Eigen on the host), which also give float32 matrices tensor-core
// arithmetic (math "tf32" / "bf16", GPU). One function a call for both: views, options and entries
// (entries.hpp's overloads) follow from `size`, an integral_constant<int, N> or a run-time N.

parascan::matrix_math math_of(const std::string& math) {
  if (math == "exact") return parascan::matrix_math::exact;
  if (math == "tf32") return parascan::matrix_math::tf32;
  if (math == "bf16") return parascan::matrix_math::bf16;
  parascan::detail::fail("math", "'exact', 'tf32' or 'bf16', got '" + math + "'");
}

/// Calls f(S{}, size) for a float32/float64 array of N x N matrices (size: pyext::with_chain_size's).
template <class F>
void dispatch_chain(const in_array& m, const std::string& name, const std::string& math, F&& f) {
  if (m.ndim() < 3)
    parascan::detail::fail(name, "an array of N x N matrices with a time axis: shape (..., T, ..., N, N)");
  const index_t n = index_t(m.shape(m.ndim() - 1));
  const auto by_size = [&](auto scalar) {
    pyext::with_chain_size(n, math_of(math), [&](auto size) { f(scalar, size); });
  };
  if (m.dtype() == nb::dtype<float>()) return by_size(float{});
  if (m.dtype() == nb::dtype<double>()) return by_size(double{});
  parascan::detail::fail(name + ".dtype", "float32 or float64");
}

/// The view of an array of dense row-major N x N matrices (element_shape_of's shape) of scalars T: fixed-size
/// elements, or a runtime-size chain's matrices (each one's first scalar placed as view_at places elements).
template <class T, int N>
auto chain_view(const void* p, const array_shape& a, const batch_plan& plan, std::integral_constant<int, N>) {
  using S = std::remove_const_t<T>;
  return view_at<std::conditional_t<std::is_const<T>::value, const matrix_of<S, N>, matrix_of<S, N>>>(p, a, plan);
}
template <class T>
parascan::matrix_sequences<T> chain_view(const void* p, array_shape a, const batch_plan& plan, index_t n) {
  for (index_t& stride : a.stride) stride *= n * n;
  return parascan::matrices_at(view_at<T>(p, a, plan), n, n, parascan::matrix_storage::row_major);
}

/// Workspace from a Python callable, make(bytes) -> an object with data_ptr() (parascan.torch: a uint8
/// tensor from PyTorch's caching allocator on the call's device and stream), each kept alive until parascan
/// releases it (once the work that uses it is enqueued: the allocator orders its reuse on that stream).
class python_workspace final : public pyext::workspace_source {
 public:
  explicit python_workspace(const std::optional<nb::callable>& make) : make_(make) {}
  pyext::workspace_source* get() { return make_ ? this : nullptr; }
  void* allocate(std::size_t bytes) override {
    nb::object block = (*make_)(bytes);
    void* p = reinterpret_cast<void*>(nb::cast<std::uintptr_t>(block.attr("data_ptr")()));
    held_.emplace_back(p, std::move(block));
    return p;
  }
  void release(void* p) override {
    for (auto it = held_.begin(); it != held_.end(); ++it)
      if (it->first == p) return void(held_.erase(it));
  }

 private:
  std::optional<nb::callable> make_;
  std::vector<std::pair<void*, nb::object>> held_;
};

/// Runs f(exec, S{}, size, N) for a chain call on the matrices m: its backend (the GPU's temporaries from
/// `workspace` where given), scalar and size (dispatch_chain).
template <class F>
void with_chain(const in_array& m, unsigned threads, std::uintptr_t stream, const std::string& math,
                const std::optional<nb::callable>& workspace, F&& f) {
  python_workspace source(workspace);
  with_backend(
      m, "matrices", threads, stream,
      [&](const auto& exec) {
        dispatch_chain(m, "matrices", math, [&](auto scalar, auto size) { f(exec, scalar, size, index_t(size)); });
      },
      source.get());
}

void matrix_chain(const in_array& m, const std::optional<out_array>& out, const std::optional<out_array>& result,
                  int dim, const std::optional<in_array>& initial, const std::optional<out_array>& final, bool reverse,
                  bool exclusive, bool right_to_left, unsigned threads, std::uintptr_t stream,
                  const std::string& math, const std::optional<nb::callable>& workspace) {
  with_chain(m, threads, stream, math, workspace, [&](const auto& exec, auto scalar, auto size, index_t n) {
    using S = decltype(scalar);
    const array_shape sm = element_shape_of(m, "matrices", 2, n);
    std::vector<array_shape> shapes = {sm};
    if (out) require_dtype<S>(*out, "out"), shapes.push_back(element_shape_of(*out, "out", 2, n));
    const batch_plan plan = plan_batch(dim, shapes);
    const auto in = chain_view<const S>(m.data(), sm, plan, size);
    const index_t values = in.count() * n * n;
    auto o = pyext::chain_options<S, false>(size, math_of(math));
    o.reverse = reverse, o.exclusive = exclusive;
    o.initial = reinterpret_cast<decltype(o.initial)>(per_sequence<S>(initial, values, "initial"));
    o.final = reinterpret_cast<decltype(o.final)>(per_sequence<S>(final, values, "final"));
    dispatch_order(right_to_left, [&](auto order) {
      using Exec = std::decay_t<decltype(exec)>;
      named({"matrices"}, [&] {
        if (out)
          pyext::matrix_chain<order.value, Exec, S>(exec, in, chain_view<S>(out->data(), shapes[1], plan, size), o);
        else
          pyext::matrix_chain_product<order.value, Exec, S>(
              exec, in, reinterpret_cast<decltype(o.final)>(per_sequence<S>(result, values, "result")), o);
      });
    });
  });
}

void matrix_chain_backward(const in_array& m, const in_array& p, const in_array& grad_p, const out_array& grad_m,
                           int dim, const std::optional<in_array>& initial, const std::optional<in_array>& grad_final,
                           const std::optional<out_array>& grad_initial, bool reverse, bool right_to_left,
                           unsigned threads, std::uintptr_t stream, const std::string& math,
                           const std::optional<nb::callable>& workspace) {
  with_chain(m, threads, stream, math, workspace, [&](const auto& exec, auto scalar, auto size, index_t n) {
    using S = decltype(scalar);
    require_dtype<S>(p, "products"), require_dtype<S>(grad_p, "grad_products"),
        require_dtype<S>(grad_m, "grad_matrices");
    const array_shape sm = element_shape_of(m, "matrices", 2, n), sp = element_shape_of(p, "products", 2, n),
                      sg = element_shape_of(grad_p, "grad_products", 2, n),
                      sd = element_shape_of(grad_m, "grad_matrices", 2, n);
    const batch_plan plan = plan_batch(dim, {sm, sp, sg, sd});
    const auto in = chain_view<const S>(m.data(), sm, plan, size);
    const index_t values = in.count() * n * n;
    auto o = pyext::chain_options<S, true>(size, math_of(math));
    o.reverse = reverse;
    o.initial = reinterpret_cast<decltype(o.initial)>(per_sequence<S>(initial, values, "initial"));
    o.grad_final = reinterpret_cast<decltype(o.grad_final)>(per_sequence<S>(grad_final, values, "grad_final"));
    o.grad_initial =
        reinterpret_cast<decltype(o.grad_initial)>(per_sequence<S>(grad_initial, values, "grad_initial"));
    dispatch_order(right_to_left, [&](auto order) {
      pyext::matrix_chain_backward<order.value, std::decay_t<decltype(exec)>, S>(
          exec, in, chain_view<const S>(p.data(), sp, plan, size),
          chain_view<const S>(grad_p.data(), sg, plan, size), chain_view<S>(grad_m.data(), sd, plan, size), o);
    });
  });
}

void matrix_chain_product_backward(const in_array& m, const in_array& grad_result, const out_array& grad_m, int dim,
                                   const std::optional<in_array>& initial,
                                   const std::optional<out_array>& grad_initial, bool reverse, bool right_to_left,
                                   unsigned threads, std::uintptr_t stream, const std::string& math,
                                   const std::optional<nb::callable>& workspace) {
  with_chain(m, threads, stream, math, workspace, [&](const auto& exec, auto scalar, auto size, index_t n) {
    using S = decltype(scalar);
    require_dtype<S>(grad_m, "grad_matrices");
    const array_shape sm = element_shape_of(m, "matrices", 2, n),
                      sd = element_shape_of(grad_m, "grad_matrices", 2, n);
    const batch_plan plan = plan_batch(dim, {sm, sd});
    const auto in = chain_view<const S>(m.data(), sm, plan, size);
    const index_t values = in.count() * n * n;
    auto o = pyext::chain_options<S, true>(size, math_of(math));
    o.reverse = reverse;
    o.initial = reinterpret_cast<decltype(o.initial)>(per_sequence<S>(initial, values, "initial"));
    o.grad_initial =
        reinterpret_cast<decltype(o.grad_initial)>(per_sequence<S>(grad_initial, values, "grad_initial"));
    const auto* g = reinterpret_cast<decltype(o.initial)>(
        per_sequence<S>(std::optional<in_array>(grad_result), values, "grad_result"));
    dispatch_order(right_to_left, [&](auto order) {
      pyext::matrix_chain_product_backward<order.value, std::decay_t<decltype(exec)>, S>(
          exec, in, g, chain_view<S>(grad_m.data(), sd, plan, size), o);
    });
  });
}

}  // namespace

NB_MODULE(_parascan, m) {
  m.doc() = "parascan's C++ entry points on DLPack arrays (see the parascan package for the Python API)";
  m.attr("version") = std::to_string(PARASCAN_VERSION_MAJOR) + "." + std::to_string(PARASCAN_VERSION_MINOR) + "." +
                      std::to_string(PARASCAN_VERSION_PATCH);
  m.attr("has_cuda") = bool(PARASCAN_PY_CUDA);
#if PARASCAN_PY_XLA
  m.def("xla_targets", &pyext::xla_targets);
#endif
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const parascan::error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("linear_recurrence", &linear_recurrence, nb::arg("gates"), nb::arg("tokens"), nb::arg("out"), nb::arg("dim"),
        nb::arg("initial").none(), nb::arg("final").none(), nb::arg("reverse"), nb::arg("exclusive"),
        nb::arg("cu_seqlens").none(), nb::arg("threads"), nb::arg("stream") = 0);
  m.def("linear_recurrence_backward", &linear_recurrence_backward, nb::arg("gates"), nb::arg("x"), nb::arg("grad_x"),
        nb::arg("grad_gates"), nb::arg("grad_tokens"), nb::arg("dim"), nb::arg("initial").none(),
        nb::arg("grad_final").none(), nb::arg("grad_initial").none(), nb::arg("reverse"), nb::arg("cu_seqlens").none(),
        nb::arg("threads"), nb::arg("stream") = 0);
  m.def("linear_recurrence_by_address", &linear_recurrence_by_address, nb::arg("gates"), nb::arg("tokens"),
        nb::arg("out"), nb::arg("rows"), nb::arg("steps"), nb::arg("dtype"), nb::arg("device"), nb::arg("reverse"),
        nb::arg("threads"), nb::arg("stream") = 0);
  m.def("linear_recurrence_backward_by_address", &linear_recurrence_backward_by_address, nb::arg("gates"),
        nb::arg("x"), nb::arg("grad_x"), nb::arg("grad_gates"), nb::arg("grad_tokens"), nb::arg("rows"),
        nb::arg("steps"), nb::arg("dtype"), nb::arg("device"), nb::arg("reverse"), nb::arg("threads"),
        nb::arg("stream") = 0);
  m.def("logcumsumexp_backward", &logcumsumexp_backward, nb::arg("x"), nb::arg("y"), nb::arg("grad_y"),
        nb::arg("grad_x"), nb::arg("dim"), nb::arg("initial").none(), nb::arg("grad_final").none(),
        nb::arg("grad_initial").none(), nb::arg("reverse"), nb::arg("exclusive"), nb::arg("cu_seqlens").none(),
        nb::arg("threads"), nb::arg("stream") = 0);
  m.def("log_linear_recurrence", &log_linear_recurrence, nb::arg("log_gates"), nb::arg("log_tokens"), nb::arg("out"),
        nb::arg("dim"), nb::arg("initial").none(), nb::arg("final").none(), nb::arg("reverse"), nb::arg("exclusive"),
        nb::arg("cu_seqlens").none(), nb::arg("threads"), nb::arg("stream") = 0);
  m.def("log_linear_recurrence_backward", &log_linear_recurrence_backward, nb::arg("log_gates"), nb::arg("log_tokens"),
        nb::arg("log_x"), nb::arg("grad_log_x"), nb::arg("grad_log_gates"), nb::arg("grad_log_tokens"), nb::arg("dim"),
        nb::arg("initial").none(), nb::arg("grad_final").none(), nb::arg("grad_initial").none(), nb::arg("reverse"),
        nb::arg("cu_seqlens").none(), nb::arg("threads"), nb::arg("stream") = 0);
  m.def("signed_log_linear_recurrence", &signed_log_linear_recurrence, nb::arg("log_gates"), nb::arg("tokens"),
        nb::arg("out"), nb::arg("dim"), nb::arg("initial").none(), nb::arg("final").none(), nb::arg("reverse"),
        nb::arg("exclusive"), nb::arg("cu_seqlens").none(), nb::arg("threads"), nb::arg("stream") = 0);
  m.def("signed_log_linear_recurrence_backward", &signed_log_linear_recurrence_backward, nb::arg("log_gates"),
        nb::arg("tokens"), nb::arg("x"), nb::arg("grad_log_abs_x"), nb::arg("grad_log_gates"), nb::arg("grad_tokens"),
        nb::arg("dim"), nb::arg("initial").none(), nb::arg("grad_final").none(), nb::arg("grad_initial").none(),
        nb::arg("reverse"), nb::arg("cu_seqlens").none(), nb::arg("threads"), nb::arg("stream") = 0);
  m.def("affine_recurrence", &affine_recurrence, nb::arg("W"), nb::arg("b"), nb::arg("out"), nb::arg("dim"),
        nb::arg("initial").none(), nb::arg("final").none(), nb::arg("reverse"), nb::arg("exclusive"),
        nb::arg("threads"), nb::arg("stream") = 0);
  m.def("affine_recurrence_backward", &affine_recurrence_backward, nb::arg("W"), nb::arg("x"), nb::arg("grad_x"),
        nb::arg("grad_W"), nb::arg("grad_b"), nb::arg("dim"), nb::arg("initial").none(), nb::arg("grad_final").none(),
        nb::arg("grad_initial").none(), nb::arg("reverse"), nb::arg("threads"), nb::arg("stream") = 0);
  m.def("matrix_chain", &matrix_chain, nb::arg("matrices"), nb::arg("out").none(), nb::arg("result").none(),
        nb::arg("dim"), nb::arg("initial").none(), nb::arg("final").none(), nb::arg("reverse"), nb::arg("exclusive"),
        nb::arg("right_to_left"), nb::arg("threads"), nb::arg("stream") = 0, nb::arg("math") = "exact",
        nb::arg("workspace").none() = nb::none());
  m.def("matrix_chain_backward", &matrix_chain_backward, nb::arg("matrices"), nb::arg("products"),
        nb::arg("grad_products"), nb::arg("grad_matrices"), nb::arg("dim"), nb::arg("initial").none(),
        nb::arg("grad_final").none(), nb::arg("grad_initial").none(), nb::arg("reverse"), nb::arg("right_to_left"),
        nb::arg("threads"), nb::arg("stream") = 0, nb::arg("math") = "exact", nb::arg("workspace").none() = nb::none());
  m.def("matrix_chain_product_backward", &matrix_chain_product_backward, nb::arg("matrices"), nb::arg("grad_result"),
        nb::arg("grad_matrices"), nb::arg("dim"), nb::arg("initial").none(), nb::arg("grad_initial").none(),
        nb::arg("reverse"), nb::arg("right_to_left"), nb::arg("threads"), nb::arg("stream") = 0,
        nb::arg("math") = "exact", nb::arg("workspace").none() = nb::none());
  const auto def_scan = [&](const char* name, auto kind) {
    m.def(name, &real_scan<decltype(kind)::value>, nb::arg("x"), nb::arg("out"), nb::arg("dim"),
          nb::arg("initial").none(), nb::arg("final").none(), nb::arg("reverse"), nb::arg("exclusive"),
          nb::arg("cu_seqlens").none(), nb::arg("threads"), nb::arg("stream") = 0);
  };
  using kind = pyext::scan_kind;
  def_scan("cumsum", std::integral_constant<kind, kind::cumsum>{});
  def_scan("cumprod", std::integral_constant<kind, kind::cumprod>{});
  def_scan("cummax", std::integral_constant<kind, kind::cummax>{});
  def_scan("cummin", std::integral_constant<kind, kind::cummin>{});
  def_scan("logcumsumexp", std::integral_constant<kind, kind::logcumsumexp>{});
}
