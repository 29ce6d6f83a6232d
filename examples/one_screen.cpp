// parascan on one screen: your own operator (a running maximum with its position) and a built-in one
// (x[t] = a[t] x[t-1] + b[t]), on the CPU. On the GPU the same calls take parascan::cuda{stream} and
// device pointers, from a .cu file that includes <parascan/cuda.cuh> (examples/quickstart.cpp does both).
#include <cmath>
#include <cstdio>
#include <vector>

#include <parascan/ops/linear_recurrence.hpp>
#include <parascan/parascan.hpp>

struct running_argmax {  // state: the largest value so far and where it was
  struct value_type { float value; long long at; };
  PARASCAN_HD value_type identity() const { return {-INFINITY, -1}; }
  PARASCAN_HD value_type operator()(value_type earlier, value_type later) const {
    return later.value > earlier.value ? later : earlier;  // ties keep the earliest
  }
  PARASCAN_HD value_type lift(float value, long long at) const { return {value, at}; }
  PARASCAN_HD long long project(value_type s) const { return s.at; }
};

int main() {
  const long long B = 2, D = 3, T = 1000, n = B * D * T;
  std::vector<float> a(n), b(n), x(n), v(n);
  std::vector<long long> at(n), argmax(n);
  for (long long i = 0; i < n; ++i)
    a[i] = 0.9f + 0.05f * std::sin(float(i)), b[i] = std::cos(0.1f * float(i)), v[i] = std::sin(0.37f * float(i * i % 977)),
    at[i] = i % T;

  // x[t] = a[t] x[t-1] + b[t] over the B * D sequences of a (B, D, T) batch, time contiguous
  parascan::linear_recurrence(parascan::host{}, parascan::bdt(a.data(), B, D, T), parascan::bdt(b.data(), B, D, T),
                              parascan::bdt(x.data(), B, D, T));
  // argmax so far of each sequence, two inputs lifted together
  parascan::prefix_scan(parascan::host{}, running_argmax{},
                        parascan::inputs(parascan::bdt(v.data(), B, D, T), parascan::bdt(at.data(), B, D, T)),
                        parascan::bdt(argmax.data(), B, D, T));

  bool ok = true;  // check against plain loops
  for (long long s = 0; s < B * D; ++s) {
    double ref = 0;
    long long best = 0;
    for (long long t = 0; t < T; ++t) {
      const long long i = s * T + t;
      ref = a[i] * ref + b[i];
      if (v[i] > v[s * T + best]) best = t;
      ok = ok && std::abs(x[i] - ref) <= 1e-4 * (1 + std::abs(ref)) && argmax[i] == best;
    }
  }
  std::printf("x[T-1] of sequence 0: %.6f, argmax: %lld; %s\n", x[T - 1], argmax[T - 1], ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
