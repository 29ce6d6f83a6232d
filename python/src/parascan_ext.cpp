// parascan's Python extension (nanobind): the entry points on arrays that speak DLPack, without copies.
// Every function takes its outputs (the Python layer allocates them in the input's framework), the time
// axis `dim`, and per-sequence arrays (initial / final states) in sequence order. Arrays on the host run
// the host backend; errors are parascan::error, raised in Python as ValueError with parascan's message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <parascan/ops/basic.hpp>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/ops/logsumexp.hpp>
#include <parascan/parascan.hpp>

namespace nb = nanobind;
using parascan::index_t;

namespace {

using in_array = nb::ndarray<nb::ro>;
using out_array = nb::ndarray<>;

/// The element types the extension dispatches on (host backend).
enum class dtype { f32, f64, c64, c128 };

dtype dtype_of(const nb::dlpack::dtype& d, const std::string& name) {
  if (d == nb::dtype<float>()) return dtype::f32;
  if (d == nb::dtype<double>()) return dtype::f64;
  if (d == nb::dtype<std::complex<float>>()) return dtype::c64;
  if (d == nb::dtype<std::complex<double>>()) return dtype::c128;
  parascan::detail::fail(name + ".dtype", "float32, float64, complex64 or complex128 on the host");
}

template <class A>
void require_host(const A& a, const std::string& name) {
  if (a.device_type() != nb::device::cpu::value)
    parascan::detail::fail(name, "a host array (this build of the extension has the host backend only)");
}

/// An array's shape and strides (in elements), for planning its view.
struct array_shape {
  std::string name;
  std::vector<index_t> shape, stride;
};
template <class A>
array_shape shape_of(const A& a, const std::string& name) {
  array_shape s{name, {}, {}};
  for (std::size_t k = 0; k < a.ndim(); ++k) s.shape.push_back(index_t(a.shape(k))), s.stride.push_back(index_t(a.stride(k)));
  return s;
}

/// How the arrays of one call become parascan views: axis `time_axis` is time, the other axes (in order)
/// are the batch, merged into the view's two batch extents where every array's strides allow (adjacent
/// axes whose outer stride steps over the inner axis), so that sequence s is the C-order index of the
/// batch axes in every array alike.
struct batch_plan {
  int time_axis = 0;
  std::vector<std::vector<int>> groups;  // batch axes (extent > 1) of each of the two extents
};

batch_plan plan_batch(int dim, const std::vector<array_shape>& arrays) {
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
    parascan::detail::fail("dim", "an axis of " + first.name + " (" + std::to_string(ndim) + " axes), got " +
                                      std::to_string(dim));
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
  return plan;
}

/// The parascan view of an array under a plan.
template <class T, class A>
parascan::sequences<T> view_of(const A& a, const batch_plan& plan) {
  index_t extent[2] = {1, 1}, stride[2] = {0, 0};
  for (int g = 0; g < 2; ++g)
    for (int k : plan.groups[g]) extent[g] *= index_t(a.shape(k)), stride[g] = index_t(a.stride(k));
  T* data = static_cast<T*>(const_cast<void*>(static_cast<const void*>(a.data())));
  return parascan::strided(data, extent[0], extent[1], stride[0], stride[1], index_t(a.shape(plan.time_axis)),
                           index_t(a.stride(plan.time_axis)));
}

/// Runs f, naming the arguments in parascan's messages as the Python function does (inputs[k] -> its name).
template <class F>
void named(const std::vector<std::string>& inputs, F&& f) {
  try {
    f();
  } catch (const parascan::error& e) {
    std::string message = e.what();
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const std::string generic = "inputs[" + std::to_string(k) + "]";
      for (std::size_t at; (at = message.find(generic)) != std::string::npos;) message.replace(at, generic.size(), inputs[k]);
    }
    throw parascan::error(message);
  }
}

/// One value per sequence (initial or final states): a C-contiguous array of `count` elements of T.
template <class T, class A>
T* per_sequence(const std::optional<A>& a, index_t count, const std::string& name) {
  if (!a) return nullptr;
  require_host(*a, name);
  if (a->dtype() != nb::dtype<T>()) parascan::detail::fail(name + ".dtype", "the output's dtype");
  if (index_t(a->size()) != count)
    parascan::detail::fail(name, std::to_string(count) + " values (one per sequence), got " +
                                     std::to_string(a->size()));
  index_t expected = 1;
  for (int k = int(a->ndim()) - 1; k >= 0; --k) {
    if (a->shape(k) != 1 && index_t(a->stride(k)) != expected) parascan::detail::fail(name, "a C-contiguous array");
    expected *= index_t(a->shape(k));
  }
  return static_cast<T*>(const_cast<void*>(static_cast<const void*>(a->data())));
}

/// Calls f(T{}) for the element type of `a` (all arrays of a call share it; checked by the callee).
template <class F>
void dispatch(const in_array& a, const std::string& name, F&& f) {
  switch (dtype_of(a.dtype(), name)) {
    case dtype::f32: return f(float{});
    case dtype::f64: return f(double{});
    case dtype::c64: return f(std::complex<float>{});
    case dtype::c128: return f(std::complex<double>{});
  }
}

template <class T, class A>
void require_dtype(const A& a, const std::string& name) {
  require_host(a, name);
  if (a.dtype() != nb::dtype<T>()) parascan::detail::fail(name + ".dtype", "the dtype of the first input");
}

template <class T>
parascan::options<T> scan_options(bool reverse, bool exclusive, T* initial, T* final) {
  parascan::options<T> o;
  o.reverse = reverse, o.exclusive = exclusive, o.initial = initial, o.final = final;
  return o;
}

void linear_recurrence(const in_array& gates, const in_array& tokens, const out_array& out, int dim,
                       const std::optional<in_array>& initial, const std::optional<out_array>& final, bool reverse,
                       bool exclusive, unsigned threads) {
  require_host(gates, "gates");
  dispatch(gates, "gates", [&](auto tag) {
    using T = decltype(tag);
    require_dtype<T>(tokens, "tokens"), require_dtype<T>(out, "out");
    const batch_plan plan = plan_batch(dim, {shape_of(gates, "gates"), shape_of(tokens, "tokens"), shape_of(out, "out")});
    const auto x = view_of<T>(out, plan);
    const index_t count = x.count();
    named({"gates", "tokens"}, [&] {
      parascan::linear_recurrence(parascan::host{threads}, view_of<const T>(gates, plan),
                                  view_of<const T>(tokens, plan), x,
                                  scan_options<T>(reverse, exclusive, per_sequence<T>(initial, count, "initial"),
                                                  per_sequence<T>(final, count, "final")));
    });
  });
}

void linear_recurrence_backward(const in_array& gates, const in_array& x, const in_array& grad_x,
                                const out_array& grad_gates, const out_array& grad_tokens, int dim,
                                const std::optional<in_array>& initial, const std::optional<in_array>& grad_final,
                                const std::optional<out_array>& grad_initial, bool reverse, unsigned threads) {
  require_host(gates, "gates");
  dispatch(gates, "gates", [&](auto tag) {
    using T = decltype(tag);
    require_dtype<T>(x, "x"), require_dtype<T>(grad_x, "grad_x");
    require_dtype<T>(grad_gates, "grad_gates"), require_dtype<T>(grad_tokens, "grad_tokens");
    const batch_plan plan =
        plan_batch(dim, {shape_of(gates, "gates"), shape_of(x, "x"), shape_of(grad_x, "grad_x"),
                         shape_of(grad_gates, "grad_gates"), shape_of(grad_tokens, "grad_tokens")});
    const auto a = view_of<const T>(gates, plan);
    const index_t count = a.count();
    parascan::backward_options<T> o;
    o.reverse = reverse;
    o.initial = per_sequence<T>(initial, count, "initial");
    o.grad_final = per_sequence<T>(grad_final, count, "grad_final");
    o.grad_initial = per_sequence<T>(grad_initial, count, "grad_initial");
    parascan::linear_recurrence_backward(parascan::host{threads}, a, view_of<const T>(x, plan),
                                         view_of<const T>(grad_x, plan), view_of<T>(grad_gates, plan),
                                         view_of<T>(grad_tokens, plan), o);
  });
}

/// A one-input scan with a real accumulator (cumsum & co., logcumsumexp): float32 and float64 only.
template <class Call>
void real_scan(const in_array& x, const out_array& out, int dim, const std::optional<in_array>& initial,
               const std::optional<out_array>& final, bool reverse, bool exclusive, Call&& call) {
  require_host(x, "x");
  const auto run = [&](auto tag) {
    using T = decltype(tag);
    require_dtype<T>(out, "out");
    const batch_plan plan = plan_batch(dim, {shape_of(x, "x"), shape_of(out, "out")});
    const auto y = view_of<T>(out, plan);
    named({"x"}, [&] {
      call(view_of<const T>(x, plan), y,
           scan_options<T>(reverse, exclusive, per_sequence<T>(initial, y.count(), "initial"),
                           per_sequence<T>(final, y.count(), "final")));
    });
  };
  switch (dtype_of(x.dtype(), "x")) {
    case dtype::f32: return run(float{});
    case dtype::f64: return run(double{});
    default: parascan::detail::fail("x.dtype", "float32 or float64");
  }
}

}  // namespace

NB_MODULE(_parascan, m) {
  m.doc() = "parascan's C++ entry points on DLPack arrays (see the parascan package for the Python API)";
  m.attr("version") = std::to_string(PARASCAN_VERSION_MAJOR) + "." + std::to_string(PARASCAN_VERSION_MINOR) + "." +
                      std::to_string(PARASCAN_VERSION_PATCH);
  m.attr("has_cuda") = false;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const parascan::error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("linear_recurrence", &linear_recurrence, nb::arg("gates"), nb::arg("tokens"), nb::arg("out"), nb::arg("dim"),
        nb::arg("initial").none(), nb::arg("final").none(), nb::arg("reverse"), nb::arg("exclusive"),
        nb::arg("threads"));
  m.def("linear_recurrence_backward", &linear_recurrence_backward, nb::arg("gates"), nb::arg("x"), nb::arg("grad_x"),
        nb::arg("grad_gates"), nb::arg("grad_tokens"), nb::arg("dim"), nb::arg("initial").none(),
        nb::arg("grad_final").none(), nb::arg("grad_initial").none(), nb::arg("reverse"), nb::arg("threads"));
  const auto def_scan = [&](const char* name, auto call) {
    m.def(
        name,
        [call](const in_array& x, const out_array& out, int dim, const std::optional<in_array>& initial,
               const std::optional<out_array>& final, bool reverse, bool exclusive, unsigned threads) {
          real_scan(x, out, dim, initial, final, reverse, exclusive,
                    [&](const auto& in, const auto& y, const auto& opts) { call(parascan::host{threads}, in, y, opts); });
        },
        nb::arg("x"), nb::arg("out"), nb::arg("dim"), nb::arg("initial").none(), nb::arg("final").none(),
        nb::arg("reverse"), nb::arg("exclusive"), nb::arg("threads"));
  };
  def_scan("cumsum", [](const auto& exec, const auto& in, const auto& y, const auto& opts) {
    parascan::cumsum(exec, in, y, opts);
  });
  def_scan("cumprod", [](const auto& exec, const auto& in, const auto& y, const auto& opts) {
    parascan::cumprod(exec, in, y, opts);
  });
  def_scan("cummax", [](const auto& exec, const auto& in, const auto& y, const auto& opts) {
    parascan::cummax(exec, in, y, opts);
  });
  def_scan("cummin", [](const auto& exec, const auto& in, const auto& y, const auto& opts) {
    parascan::cummin(exec, in, y, opts);
  });
  def_scan("logcumsumexp", [](const auto& exec, const auto& in, const auto& y, const auto& opts) {
    parascan::logcumsumexp(exec, in, y, opts);
  });
}
