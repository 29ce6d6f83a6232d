// EXPECT: parascan operator: missing `using value_type = \.\.\.
// An operator without a value_type must stop at the concept check with its readable message.
#include <parascan/parascan.hpp>

struct no_value_type {
  float identity() const { return 0.0f; }
  float operator()(float a, float b) const { return a + b; }
};

int main() {
  float x[4] = {1, 2, 3, 4}, y[4];
  parascan::prefix_scan(parascan::host{1}, no_value_type{}, parascan::single(x, 4), parascan::single(y, 4));
}
