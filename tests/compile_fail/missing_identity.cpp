// EXPECT: parascan operator: missing `value_type identity\(\) const`
// An operator without identity() must stop at the concept check with its readable message.
#include <parascan/parascan.hpp>

struct no_identity {
  using value_type = float;
  float operator()(float a, float b) const { return a + b; }
};

int main() {
  float x[4] = {1, 2, 3, 4}, y[4];
  parascan::prefix_scan(parascan::host{1}, no_identity{}, parascan::single(x, 4), parascan::single(y, 4));
}
