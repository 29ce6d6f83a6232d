// Cases for ops/matrix_product.hpp at N = 2, 3, 8, 16, 32 (fp32, and fp64 at N = 3) on a reduced sweep:
// every layout, a spread of the options, lengths up to 1000 (33 at N = 32, where the reference and the scan each cost 32^3 per step). The orders alternate across sizes.
#include "support/matrix_product_check.hpp"

namespace {
using parascan::chain_order;
template <int MaxT>
const auto small_config = [](auto&& f) { ptest::for_each_small_config(MaxT, 5, f); };
}  // namespace

TEST_CASE("matrix_chain: N = 2, 3, 8") {
  ptest::check_matrix_chain<float, 2, chain_order::left_to_right>(small_config<1000>, 4);
  ptest::check_matrix_chain<double, 3, chain_order::right_to_left>(small_config<1000>, 4);
  ptest::check_matrix_chain<float, 8, chain_order::left_to_right>(small_config<1000>, 4);
}

TEST_CASE("matrix_chain: N = 16, 32") {
  ptest::check_matrix_chain<float, 16, chain_order::right_to_left>(small_config<1000>, 4);
  ptest::check_matrix_chain<float, 32, chain_order::left_to_right>(small_config<33>, 4);
}
