// A complete operator compiles with the same command: the control that keeps the compile-fail tests
// honest (a broken include path or flag would otherwise make every one of them "fail" for nothing).
#include <parascan/parascan.hpp>

struct sum {
  using value_type = float;
  float identity() const { return 0.0f; }
  float operator()(float a, float b) const { return a + b; }
};

int main() {
  float x[4] = {1, 2, 3, 4}, y[4];
  parascan::prefix_scan(parascan::host{1}, sum{}, parascan::single(x, 4), parascan::single(y, 4));
}
