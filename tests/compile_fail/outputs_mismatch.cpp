// EXPECT: parascan: emit\(\) must give one value per output
// emit() gives two values but the scan has one output view: a compile-time error, not a silent drop.
#include <parascan/parascan.hpp>

struct sum_and_double {
  using value_type = float;
  float identity() const { return 0.0f; }
  float operator()(float a, float b) const { return a + b; }
  parascan::value_pack<float, float> emit(float s, float) const { return parascan::values(s, 2 * s); }
};

int main() {
  float a[4] = {1, 2, 3, 4}, y[4];
  parascan::prefix_scan(parascan::host{1}, sum_and_double{}, parascan::single(a, 4), parascan::single(y, 4));
}
