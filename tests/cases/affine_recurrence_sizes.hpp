// Cases for ops/affine_recurrence.hpp at N = 2, 3, 8, 16, 32 in fp32 on a reduced sweep (every layout,
// a spread of the options; lengths up to 1000).
#include "support/affine_check.hpp"

namespace {
template <int MaxT>
const auto small_config = [](auto&& f) { ptest::for_each_small_config(MaxT, 5, f); };
}

TEST_CASE("affine_recurrence: N = 2, 3, 8") {
  ptest::check_affine_recurrence<float, 2>(small_config<1000>, 16);
  ptest::check_affine_recurrence<float, 3>(small_config<1000>, 16);
  ptest::check_affine_recurrence<float, 8>(small_config<1000>, 16);
}

TEST_CASE("affine_recurrence: N = 16, 32") {
  ptest::check_affine_recurrence<float, 16>(small_config<1000>, 16);
  ptest::check_affine_recurrence<float, 32>(small_config<1000>, 16);
}
