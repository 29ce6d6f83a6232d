// Validation: every bad argument is rejected with a parascan::error whose message names it, before
// anything is written (outputs are poisoned and compared byte for byte afterwards). Exact in-place
// aliasing (output == input view) is the one overlap allowed, and it computes the right thing; views
// whose address ranges interleave without a shared element are not an overlap.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include <parascan/parascan.hpp>
#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/ops/log_linear_recurrence.hpp>

using parascan::index_t;

namespace {

// Local operators, so that these tests depend on the core alone.
struct sum {
  using value_type = float;
  float identity() const { return 0.0f; }
  float operator()(float a, float b) const { return a + b; }
};

// Two inputs, lifted to their product: exercises input-pack checks (inputs[1]).
struct sum_of_products {
  using value_type = float;
  float identity() const { return 0.0f; }
  float operator()(float a, float b) const { return a + b; }
  float lift(float x, float w) const { return x * w; }
};

// An operator whose outputs are not its states (project) and that has no seed(): it cannot take an
// initial state.
struct affine_no_seed {
  struct value_type {
    float a, b;
  };
  value_type identity() const { return {1.0f, 0.0f}; }
  value_type operator()(value_type e, value_type l) const { return {e.a * l.a, l.a * e.b + l.b}; }
  value_type lift(float a) const { return {a, 1.0f}; }
  float project(value_type s) const { return s.b; }
};

// Byte snapshots of buffers, to prove that a rejected call wrote nothing.
class untouched {
 public:
  template <class T>
  untouched& watch(const std::vector<T>& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    saved_.push_back({p, std::vector<unsigned char>(p, p + v.size() * sizeof(T))});
    return *this;
  }
  bool holds() const {
    for (const auto& [p, bytes] : saved_)
      if (std::memcmp(p, bytes.data(), bytes.size()) != 0) return false;
    return true;
  }

 private:
  std::vector<std::pair<const unsigned char*, std::vector<unsigned char>>> saved_;
};

// call() must throw parascan::error naming every string of `names`, leaving the watched buffers as they were.
template <class Call>
void check_rejected(Call&& call, std::initializer_list<const char*> names, const untouched& guard) {
  std::string message;
  try {
    call();
  } catch (const parascan::error& e) {
    message = e.what();
  }
  INFO("message: \"" << message << "\"");
  REQUIRE_MESSAGE(!message.empty(), "expected a parascan::error");
  for (const char* name : names) CHECK_MESSAGE(message.find(name) != std::string::npos, "should name " << std::string(name));
  CHECK_MESSAGE(guard.holds(), "a rejected call wrote to an output");
}

// Bytes no scan of these inputs produces, so that a partial write shows.
template <class T>
std::vector<T> poisoned(std::size_t n) {
  std::vector<T> v(n);
  std::memset(v.data(), 0xA5, n * sizeof(T));
  return v;
}

struct fixture {
  static constexpr index_t n = 64;
  std::vector<float> x = std::vector<float>(n, 1.0f), w = std::vector<float>(n, 2.0f);
  std::vector<float> y = poisoned<float>(n), fin = poisoned<float>(8);
  parascan::host exec{2};
  untouched guard;
  fixture() { guard.watch(x).watch(w).watch(y).watch(fin); }
};

}  // namespace

TEST_CASE_FIXTURE(fixture, "null data pointers") {
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 8), parascan::single<float>(nullptr, 8)); },
                 {"output.data"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single<float>(nullptr, 8), parascan::single(y.data(), 8)); },
                 {"inputs[0].data"}, guard);
  check_rejected(
      [&] {
        parascan::prefix_scan(exec, sum_of_products{},
                              parascan::inputs(parascan::single(x.data(), 8), parascan::single<float>(nullptr, 8)),
                              parascan::single(y.data(), 8));
      },
      {"inputs[1].data"}, guard);
  check_rejected([&] { parascan::reduce_scan(exec, sum{}, parascan::single(x.data(), 8), nullptr); }, {"result"}, guard);
  check_rejected([&] { parascan::reduce_states(exec, sum{}, parascan::single(x.data(), 8), nullptr); }, {"result"},
                 guard);
  // An empty view needs no pointer.
  parascan::prefix_scan(exec, sum{}, parascan::single<float>(nullptr, 0), parascan::single<float>(nullptr, 0));
}

TEST_CASE_FIXTURE(fixture, "negative extents, strides and lengths") {
  const auto in = parascan::bdt(x.data(), 2, 4, 8);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, in, parascan::strided(y.data(), -2, 4, 32, 8, 8, 1)); },
                 {"output.extent"}, guard);
  check_rejected(
      [&] { parascan::prefix_scan(exec, sum{}, parascan::strided(x.data(), 2, -4, 32, 8, 8, 1), parascan::bdt(y.data(), 2, 4, 8)); },
      {"inputs[0].extent"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, in, parascan::strided(y.data(), 2, 4, 32, -8, 8, 1)); },
                 {"output.stride"}, guard);
  check_rejected(
      [&] { parascan::prefix_scan(exec, sum{}, parascan::strided(x.data(), 2, 4, 32, 8, 8, -1), parascan::bdt(y.data(), 2, 4, 8)); },
      {"inputs[0].stride"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 8), parascan::single(y.data(), -8)); },
                 {"output.length"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), -8), parascan::single(y.data(), 8)); },
                 {"inputs[0].length"}, guard);
  check_rejected([&] { parascan::reduce_scan(exec, sum{}, parascan::single(x.data(), -8), fin.data()); },
                 {"inputs[0].length"}, guard);
}

TEST_CASE_FIXTURE(fixture, "inputs whose extents or lengths differ from the output's") {
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::bdt(x.data(), 2, 4, 8), parascan::bdt(y.data(), 4, 2, 8)); },
                 {"inputs[0].extent"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 9), parascan::single(y.data(), 8)); },
                 {"inputs[0].length"}, guard);
  check_rejected(
      [&] {
        parascan::prefix_scan(exec, sum_of_products{},
                              parascan::inputs(parascan::single(x.data(), 8), parascan::single(w.data(), 7)),
                              parascan::single(y.data(), 8));
      },
      {"inputs[1].length"}, guard);
  check_rejected(
      [&] {
        parascan::reduce_scan(exec, sum_of_products{},
                              parascan::inputs(parascan::bdt(x.data(), 2, 3, 8), parascan::bdt(w.data(), 3, 2, 8)),
                              fin.data());
      },
      {"inputs[1].extent"}, guard);
}

TEST_CASE_FIXTURE(fixture, "packed offsets: decreasing, negative first, different from the output's") {
  const std::vector<index_t> good = {0, 3, 3, 8}, decreasing = {0, 5, 3, 8}, negative = {-1, 3, 3, 8},
                             other = {0, 4, 4, 8}, shifted = {10, 13, 13, 18};
  auto td = [](float* p, const std::vector<index_t>& o) { return parascan::packed_td(p, o.data(), 3); };
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, td(x.data(), good), td(y.data(), decreasing)); },
                 {"output.offsets[2]"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, td(x.data(), decreasing), td(y.data(), good)); },
                 {"inputs[0].offsets[2]"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, td(x.data(), good), td(y.data(), negative)); },
                 {"output.offsets[0]"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, td(x.data(), other), td(y.data(), good)); },
                 {"inputs[0].offsets[1]"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::bdt(x.data(), 3, 1, 2), td(y.data(), good)); },
                 {"inputs[0].offsets"}, guard);
  check_rejected([&] { parascan::reduce_scan(exec, sum{}, td(x.data(), decreasing), fin.data()); },
                 {"inputs[0].offsets[2]"}, guard);
  // The same lengths at another place of the flat buffer are fine.
  parascan::prefix_scan(exec, sum{}, td(x.data(), shifted), td(y.data(), good));
  CHECK(y[7] == 5.0f);
}

TEST_CASE_FIXTURE(fixture, "outputs that would write one element twice") {
  const auto in = parascan::bdt(x.data(), 2, 4, 8);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 8), parascan::single(y.data(), 8, 0)); },
                 {"output.stride"}, guard);
  // Channel stride 4 over sequences of 8 steps: channel 1 starts inside channel 0.
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, in, parascan::strided(y.data(), 2, 4, 32, 4, 8, 1)); },
                 {"output.stride"}, guard);
  // Batch stride 16 over 4 channels x 8 steps (32 elements): batch 1 lands on batch 0.
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, in, parascan::strided(y.data(), 2, 4, 16, 8, 8, 1)); },
                 {"output.stride"}, guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, in, parascan::strided(y.data(), 2, 4, 0, 8, 8, 1)); },
                 {"output.stride"}, guard);
  // Inputs may broadcast through a zero stride.
  parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 8, 0), parascan::single(y.data(), 8));
  CHECK(y[7] == 8.0f);
}

TEST_CASE_FIXTURE(fixture, "outputs that partially alias an input") {
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 8), parascan::single(x.data() + 1, 8)); },
                 {"output", "inputs[0]"}, guard);
  // Same start, different stride: not in place.
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 8), parascan::single(x.data(), 8, 2)); },
                 {"output", "inputs[0]"}, guard);
  check_rejected(
      [&] {
        parascan::prefix_scan(exec, sum_of_products{},
                              parascan::inputs(parascan::single(x.data(), 8), parascan::single(w.data(), 8)),
                              parascan::single(w.data() + 4, 8));
      },
      {"output", "inputs[1]"}, guard);
}

TEST_CASE_FIXTURE(fixture, "a shifted input may not alias the output, not even in place") {
  const auto v = parascan::single(x.data(), 8);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::shifted(v, 1), v); }, {"output", "inputs[0]"},
                 guard);
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::shifted(parascan::single(x.data() + 4, 8), -1), v); },
                 {"output", "inputs[0]"}, guard);
  // Per-sequence boundary values inside the output.
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::shifted(parascan::single(y.data(), 8), 1, x.data() + 2), v); },
                 {"output", "boundaries"}, guard);
  // Per-sequence boundary values where the final states or reduce results go.
  std::vector<float> edges = poisoned<float>(4);
  guard.watch(edges);
  const auto two = parascan::bdt(w.data(), 1, 2, 8);
  parascan::options<float> to_edges;
  to_edges.final = edges.data() + 1;
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::shifted(two, -1, edges.data()), parascan::bdt(y.data(), 1, 2, 8), to_edges); },
                 {"options.final", "boundaries"}, guard);
  check_rejected([&] { parascan::reduce_scan(exec, sum{}, parascan::shifted(two, -1, edges.data()), edges.data() + 1); },
                 {"result", "boundaries"}, guard);
  // Apart: accepted.
  parascan::prefix_scan(exec, sum{}, parascan::shifted(parascan::single(y.data(), 8), 1), v);
}

// Writes the sum and the doubled sum: two outputs from one scan.
struct sum_and_double {
  using value_type = float;
  float identity() const { return 0.0f; }
  float operator()(float a, float b) const { return a + b; }
  parascan::value_pack<float, float> emit(float s, float) const { return parascan::values(s, 2 * s); }
};

TEST_CASE_FIXTURE(fixture, "output packs: every output checked, apart from each other, of output 0's shape") {
  const auto v = [](std::vector<float>& buf, index_t offset, index_t n = 8) {
    return parascan::single(buf.data() + offset, n);
  };
  std::vector<float> z = poisoned<float>(16);
  guard.watch(z);
  const auto run = [&](auto out0, auto out1, parascan::options<float> opts = {}) {
    parascan::prefix_scan(exec, sum_and_double{}, v(x, 0), parascan::outputs(out0, out1), opts);
  };
  check_rejected([&] { run(v(y, 0), v(y, 4)); }, {"outputs[1]", "outputs[0]"}, guard);
  check_rejected([&] { run(v(y, 0), v(z, 0, 7)); }, {"outputs[1].length"}, guard);
  check_rejected([&] { run(v(y, 0), parascan::single<float>(nullptr, 8)); }, {"outputs[1].data"}, guard);
  check_rejected([&] { run(v(y, 0), v(x, 2)); }, {"outputs[1]", "inputs[0]"}, guard);
  check_rejected([&] { run(v(y, 0), parascan::single(z.data(), 8, 0)); }, {"outputs[1].stride"}, guard);
  parascan::options<float> opts;
  opts.final = z.data() + 3;
  check_rejected([&] { run(v(y, 0), v(z, 0), opts); }, {"options.final", "outputs[1]"}, guard);
  opts = {};
  opts.initial = z.data() + 2;
  check_rejected([&] { run(v(y, 0), v(z, 0), opts); }, {"options.initial", "outputs[1]"}, guard);
  // Output 1 in place over the input: accepted and computed.
  std::vector<float> in(8, 1.0f), sums(8);
  parascan::prefix_scan(exec, sum_and_double{}, v(in, 0), parascan::outputs(v(sums, 0), v(in, 0)));
  for (index_t t = 0; t < 8; ++t) {
    CHECK(sums[t] == float(t + 1));
    CHECK(in[t] == float(2 * (t + 1)));
  }
}

TEST_CASE_FIXTURE(fixture, "backward passes check every argument before writing anything") {
  const auto v = [](std::vector<float>& buf, index_t offset) { return parascan::single(buf.data() + offset, 8); };
  std::vector<float> da = poisoned<float>(8), db = poisoned<float>(8);
  guard.watch(da).watch(db);
  parascan::backward_options<float> opts;
  const auto run = [&](auto gates, auto xs, auto grad, auto grad_gates, auto grad_tokens) {
    parascan::linear_recurrence_backward(exec, gates, xs, grad, grad_gates, grad_tokens, opts);
  };
  check_rejected([&] { run(v(x, 0), v(w, 0), parascan::single(y.data(), 7), v(da, 0), v(db, 0)); }, {"grad_x"}, guard);
  check_rejected([&] { run(v(x, 0), v(w, 0), v(y, 0), v(da, 0), v(y, 0)); }, {"grad_tokens", "grad_x"}, guard);
  check_rejected([&] { run(v(x, 0), v(w, 0), v(y, 0), v(da, 0), v(da, 4)); }, {"grad_tokens", "grad_gates"}, guard);
  opts.grad_initial = x.data() + 3;
  check_rejected([&] { run(v(x, 0), v(w, 0), v(y, 0), v(da, 0), v(db, 0)); }, {"options.grad_initial", "gates"}, guard);
  opts = {};
  opts.exclusive = true;  // an exclusive forward has no linear-recurrence backward
  check_rejected([&] { run(v(x, 0), v(w, 0), v(y, 0), v(da, 0), v(db, 0)); }, {"options.exclusive"}, guard);
}

TEST_CASE_FIXTURE(fixture, "the log-space backward names its arguments, log_b included, before writing anything") {
  const auto v = [](std::vector<float>& buf, index_t offset) { return parascan::single(buf.data() + offset, 8); };
  std::vector<float> da = poisoned<float>(8), db = poisoned<float>(8), lb(8, 0.0f);
  guard.watch(da).watch(db);
  const auto run = [&](auto log_b, auto grad_log_a, auto grad_log_b) {
    parascan::log_linear_recurrence_backward(exec, v(x, 0), log_b, v(w, 0), v(y, 0), grad_log_a, grad_log_b);
  };
  check_rejected([&] { run(parascan::single(lb.data(), 7), v(da, 0), v(db, 0)); }, {"log_b"}, guard);
  check_rejected([&] { run(v(lb, 0), v(da, 0), v(y, 0)); }, {"grad_log_b", "grad_log_x"}, guard);
  check_rejected([&] { run(v(lb, 0), v(da, 0), v(da, 4)); }, {"grad_log_b", "grad_log_a"}, guard);
  std::vector<float> both = poisoned<float>(12);
  guard.watch(both);
  const auto part = [&](index_t offset) { return parascan::single(both.data() + offset, 8); };
  check_rejected([&] { run(part(4), part(0), v(db, 0)); }, {"grad_log_a", "log_b"}, guard);  // half over it
}

TEST_CASE_FIXTURE(fixture, "the signed log-space backward names its arguments, signs and b included") {
  using signed_log = parascan::ops::signed_log<float>;
  const auto v = [](auto& buf, index_t offset, index_t n = 8) { return parascan::single(buf.data() + offset, n); };
  std::vector<float> da = poisoned<float>(8), db = poisoned<float>(8), lb(8, 0.0f), sa(8, 1.0f), sb(8, -1.0f);
  std::vector<signed_log> xs(8, signed_log{0.0f, 1.0f});
  guard.watch(da).watch(db).watch(xs);
  const auto four = [&](auto sign_a, auto log_b, auto sign_b, auto grad_log_a, auto grad_log_b) {
    parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), sign_a, log_b, sign_b, v(xs, 0), v(y, 0),
                                                    grad_log_a, grad_log_b);
  };
  check_rejected([&] { four(v(sa, 0, 7), v(lb, 0), v(sb, 0), v(da, 0), v(db, 0)); }, {"sign_a"}, guard);
  check_rejected([&] { four(v(sa, 0), v(lb, 0), v(sb, 0, 9), v(da, 0), v(db, 0)); }, {"sign_b"}, guard);
  check_rejected([&] { four(v(sa, 0), v(lb, 0), v(sb, 0), v(da, 0), v(da, 4)); }, {"grad_log_b", "grad_log_a"},
                 guard);
  check_rejected([&] { four(v(sa, 0), v(lb, 0), v(sb, 0), v(x, 0), v(db, 0)); }, {"grad_log_a", "log_a"}, guard);
  std::vector<float> both = poisoned<float>(12);
  guard.watch(both);
  const auto part = [&](index_t offset) { return parascan::single(both.data() + offset, 8); };
  check_rejected([&] { four(v(sa, 0), part(4), v(sb, 0), part(0), v(db, 0)); }, {"grad_log_a", "log_b"}, guard);
  const auto two = [&](auto b, auto grad_b) {
    parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), b, v(xs, 0), v(y, 0), v(da, 0), grad_b);
  };
  check_rejected([&] { two(v(lb, 1, 7), v(db, 0)); }, {"b"}, guard);
  check_rejected([&] { two(v(lb, 0), v(y, 0)); }, {"grad_b", "grad_log_abs_x"}, guard);
  check_rejected([&] { two(part(4), part(0)); }, {"grad_b", "b"}, guard);
  // Exact in-place aliasing is the one overlap allowed: grad_b over b itself (the adjoint never reads b's
  // value) gives what separate arrays give.
  std::vector<float> b_values(8), grad_b(8), grad_a1(8), grad_a2(8);
  std::vector<signed_log> x_pairs(8);
  for (int t = 0; t < 8; ++t)
    b_values[t] = float(t % 3) - 1.0f, x_pairs[t] = signed_log{0.1f * float(t), t % 2 ? -1.0f : 1.0f};
  parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), v(b_values, 0), v(x_pairs, 0), v(w, 0),
                                                  v(grad_a1, 0), v(grad_b, 0));
  parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), v(b_values, 0), v(x_pairs, 0), v(w, 0),
                                                  v(grad_a2, 0), v(b_values, 0));
  CHECK(b_values == grad_b);
  CHECK(grad_a1 == grad_a2);
  // The four-input form reads log|b| at the step it writes dL/d(log|b|) over it.
  std::vector<float> log_b(8), signs(8), grad_log_b(8);
  for (int t = 0; t < 8; ++t) log_b[t] = 0.25f * float(t) - 1.0f, signs[t] = t % 3 ? 1.0f : -1.0f;
  parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), v(signs, 0), v(log_b, 0), v(signs, 0), v(x_pairs, 0),
                                                  v(w, 0), v(grad_a1, 0), v(grad_log_b, 0));
  parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), v(signs, 0), v(log_b, 0), v(signs, 0), v(x_pairs, 0),
                                                  v(w, 0), v(grad_a2, 0), v(log_b, 0));
  CHECK(log_b == grad_log_b);
  CHECK(grad_a1 == grad_a2);

  parascan::backward_options<signed_log, float> exclusive_forward;
  exclusive_forward.exclusive = true;
  check_rejected(
      [&] {
        parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), v(lb, 0), v(xs, 0), v(y, 0), v(da, 0), v(db, 0),
                                                        exclusive_forward);
      },
      {"options.exclusive"}, guard);
  // dL/d(log|x0|) may not land on an input the wrapper checks itself (b, the signs), and is named for it.
  parascan::backward_options<signed_log, float> onto_b;
  onto_b.grad_initial = lb.data() + 3;
  guard.watch(lb);
  check_rejected(
      [&] {
        parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), v(lb, 0), v(xs, 0), v(y, 0), v(da, 0), v(db, 0),
                                                        onto_b);
      },
      {"options.grad_initial", "b"}, guard);
  check_rejected(
      [&] {
        parascan::signed_log_linear_recurrence_backward(exec, v(x, 0), v(sa, 0), v(lb, 0), v(sb, 0), v(xs, 0), v(y, 0),
                                                        v(da, 0), v(db, 0), onto_b);
      },
      {"options.grad_initial", "log_b"}, guard);
}

TEST_CASE("outputs interleaved with an input, sharing no element, are accepted and computed") {
  // (B, T, 2D): the tokens in the even channels, the scan written into the odd ones, on 1 and 3 threads.
  const index_t B = 2, T = 777, D = 6;
  for (unsigned threads : {1u, 3u}) {
    std::vector<float> tensor(std::size_t(B * T * 2 * D));
    for (std::size_t i = 0; i < tensor.size(); ++i) tensor[i] = float(int(i % 13) - 6);
    const std::vector<float> before = tensor;
    const auto even = parascan::strided(tensor.data(), B, D, T * 2 * D, 2, T, 2 * D);
    const auto odd = parascan::strided(tensor.data() + 1, B, D, T * 2 * D, 2, T, 2 * D);
    parascan::prefix_scan<parascan::host_policy<64>>(parascan::host{threads}, sum{}, even, odd);
    bool right = true;  // small integers: exact in any order
    for (index_t s = 0; s < even.count(); ++s) {
      float carry = 0;
      for (index_t t = 0; t < T; ++t) {
        carry += even.at(s, t);
        right &= odd.at(s, t) == carry && even.at(s, t) == before[&even.at(s, t) - tensor.data()];
      }
    }
    CHECK(right);
  }
  // One channel over: the output's channel c is the input's channel c + 1 (shared elements): refused.
  std::vector<float> tensor(std::size_t(B * T * 2 * D), 1.0f);
  const auto out = parascan::strided(tensor.data() + 2, B, D - 1, T * 2 * D, 2, T, 2 * D);
  const auto in_cut = parascan::strided(tensor.data(), B, D - 1, T * 2 * D, 2, T, 2 * D);
  CHECK_THROWS_AS(parascan::prefix_scan(parascan::host{1}, sum{}, in_cut, out), parascan::error);
}

TEST_CASE_FIXTURE(fixture, "final states and reduce results overlapping inputs or the output") {
  parascan::options<float> opts;
  opts.final = x.data() + 7;
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 8), parascan::single(y.data(), 8), opts); },
                 {"options.final", "inputs[0]"}, guard);
  opts.final = y.data() + 3;
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::single(x.data(), 8), parascan::single(y.data(), 8), opts); },
                 {"options.final", "output"}, guard);
  check_rejected([&] { parascan::reduce_scan(exec, sum{}, parascan::bdt(x.data(), 2, 4, 8), x.data() + 60); },
                 {"result", "inputs[0]"}, guard);
  check_rejected([&] { parascan::reduce_states(exec, sum{}, parascan::bdt(x.data(), 2, 4, 8), x.data() + 60); },
                 {"result", "inputs[0]"}, guard);
}

TEST_CASE_FIXTURE(fixture, "options reduce_scan has no use for, and initial states an operator cannot take") {
  parascan::options<float> opts;
  opts.exclusive = true;
  check_rejected([&] { parascan::reduce_scan(exec, sum{}, parascan::single(x.data(), 8), fin.data(), opts); },
                 {"options.exclusive"}, guard);
  check_rejected([&] { parascan::reduce_states(exec, sum{}, parascan::single(x.data(), 8), fin.data(), opts); },
                 {"options.exclusive"}, guard);
  opts = {};
  opts.final = fin.data() + 1;
  check_rejected([&] { parascan::reduce_scan(exec, sum{}, parascan::single(x.data(), 8), fin.data(), opts); },
                 {"options.final"}, guard);

  const std::vector<float> x0(8, 3.0f);
  opts = {};
  opts.initial = x0.data();
  check_rejected(
      [&] { parascan::prefix_scan(exec, affine_no_seed{}, parascan::single(x.data(), 8), parascan::single(y.data(), 8), opts); },
      {"options.initial"}, guard);
  check_rejected([&] { parascan::reduce_scan(exec, affine_no_seed{}, parascan::single(x.data(), 8), fin.data(), opts); },
                 {"options.initial"}, guard);
}

TEST_CASE("exact in-place aliasing: output == input view") {
  const index_t B = 3, D = 5, T = 300;
  std::vector<double> original(B * D * T);
  for (std::size_t i = 0; i < original.size(); ++i) original[i] = double((i * 7919) % 101) - 50.0;
  struct dsum {
    using value_type = double;
    double identity() const { return 0.0; }
    double operator()(double a, double b) const { return a + b; }
  };

  for (bool exclusive : {false, true})
    for (bool reverse : {false, true})
      for (unsigned threads : {1u, 4u})
        for (bool one_sequence : {false, true}) {  // one sequence: the three-phase split path on 4 threads
          CAPTURE(exclusive);
          CAPTURE(reverse);
          CAPTURE(threads);
          CAPTURE(one_sequence);
          std::vector<double> data = original;
          const auto view = one_sequence ? parascan::single(data.data(), B * D * T) : parascan::bdt(data.data(), B, D, T);
          parascan::options<double> opts;
          opts.exclusive = exclusive;
          opts.reverse = reverse;
          parascan::prefix_scan<parascan::host_policy<64>>(parascan::host{threads}, dsum{}, view, view, opts);

          const auto ref_view = one_sequence ? parascan::single(original.data(), B * D * T)
                                             : parascan::bdt(original.data(), B, D, T);
          bool all_equal = true;  // sums of small integers are exact in any order
          for (index_t s = 0; s < view.count(); ++s) {
            const index_t n = view.length_of(s);
            double carry = 0.0;
            for (index_t p = 0; p < n; ++p) {
              const index_t t = reverse ? n - 1 - p : p;
              if (exclusive) all_equal &= view.at(s, t) == carry;
              carry += ref_view.at(s, t);
              if (!exclusive) all_equal &= view.at(s, t) == carry;
            }
          }
          CHECK(all_equal);
        }
}

TEST_CASE_FIXTURE(fixture, "initial states overlapping the output or (partly) the final states") {
  const auto in = parascan::bdt(x.data(), 2, 1, 4), out = parascan::bdt(y.data(), 2, 1, 4);
  parascan::options<float> opts;
  opts.initial = y.data();  // the output's first two steps: read after sequence 0 wrote them
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, in, out, opts); }, {"options.initial", "output"}, guard);
  opts.initial = fin.data() + 1;  // half over the final states
  opts.final = fin.data();
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, in, out, opts); }, {"options.initial", "options.final"},
                 guard);
  parascan::options<float> reduce_opts;
  reduce_opts.initial = fin.data() + 1;
  check_rejected([&] { parascan::reduce_scan(exec, sum{}, in, fin.data(), reduce_opts); }, {"options.initial", "result"},
                 guard);
}

TEST_CASE("initial states that are exactly the final states carry a stream from call to call") {
  // Two calls over halves of a sequence, the state carried in place, equal one call over the whole.
  std::vector<float> x(16), y(16), whole(16), state = {0.0f};
  for (std::size_t t = 0; t < x.size(); ++t) x[t] = float(t % 5) - 1.5f;
  parascan::options<float> opts;
  opts.initial = state.data();
  opts.final = state.data();
  for (int half = 0; half < 2; ++half)
    parascan::prefix_scan(parascan::host{2}, sum{}, parascan::single(x.data() + 8 * half, 8),
                          parascan::single(y.data() + 8 * half, 8), opts);
  parascan::prefix_scan(parascan::host{2}, sum{}, parascan::single(x.data(), 16), parascan::single(whole.data(), 16));
  CHECK(y == whole);
  CHECK(state[0] == whole[15]);
  float total = 0;
  parascan::options<float> reduce_opts;
  reduce_opts.initial = &total;  // reduce: result in place of the initial state
  parascan::reduce_scan(parascan::host{1}, sum{}, parascan::single(x.data(), 16), &total, reduce_opts);
  CHECK(total == whole[15]);
}

TEST_CASE_FIXTURE(fixture, "extents and strides whose product or reach wraps 64 bits") {
  const index_t big = index_t(1) << 32;
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::bdt<float>(nullptr, big, big, 8), parascan::bdt(y.data(), big, big, 8)); },
                 {"extent", "64 bits"}, guard);
  const index_t huge = index_t(1) << 61;  // 4 bytes x 2^61: past 2^63 bytes
  check_rejected([&] { parascan::prefix_scan(exec, sum{}, parascan::strided(x.data(), 4, 1, huge, 1, 2, 1), parascan::strided(y.data(), 4, 1, huge, 1, 2, 1)); },
                 {"stride", "64 bits"}, guard);
}

TEST_CASE_FIXTURE(fixture, "packed views need their offsets; thread counts are bounded") {
  std::string message;
  try {
    (void)parascan::packed_td(x.data(), nullptr, 4, 2);
  } catch (const parascan::error& e) {
    message = e.what();
  }
  CHECK(message.find("offsets") != std::string::npos);
  CHECK(parascan::packed_td<float>(nullptr, nullptr, 0).count() == 0);  // an empty batch needs none
  check_rejected([&] { parascan::prefix_scan(parascan::host{unsigned(-1)}, sum{}, parascan::single(x.data(), 8), parascan::single(y.data(), 8)); },
                 {"host.threads"}, guard);
}
