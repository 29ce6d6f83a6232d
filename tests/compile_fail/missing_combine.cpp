// EXPECT: parascan operator: missing `value_type operator\(\)\(value_type earlier, value_type later\) const`
// An operator without its combine must stop at the concept check with its readable message.
#include <parascan/parascan.hpp>

struct no_combine {
  using value_type = float;
  float identity() const { return 0.0f; }
};

int main() {
  float x[4] = {1, 2, 3, 4}, y[4];
  parascan::prefix_scan(parascan::host{1}, no_combine{}, parascan::single(x, 4), parascan::single(y, 4));
}
