// EXPECT: parascan operator: several inputs need `value_type lift\(x0, x1, \.\.\.\) const`
// Several inputs and no lift(): the engine cannot guess how to build a state from them.
#include <parascan/parascan.hpp>

struct sum {
  using value_type = float;
  float identity() const { return 0.0f; }
  float operator()(float a, float b) const { return a + b; }
};

int main() {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, y[4];
  parascan::prefix_scan(parascan::host{1}, sum{}, parascan::inputs(parascan::single(a, 4), parascan::single(b, 4)),
                        parascan::single(y, 4));
}
