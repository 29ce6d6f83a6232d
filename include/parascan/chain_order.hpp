// The order of a chain of matrix products: the side on which each later matrix multiplies (shared by the
// fixed-size operator of ops/matrix_product.hpp and the runtime-size chains of ops/runtime_matrix_chain.hpp).
#pragma once

namespace parascan {

enum class chain_order {
  left_to_right,  // P[t] = P[t-1] M[t]: the written order of a chain, M[0] M[1] ... M[t]
  right_to_left,  // P[t] = M[t] P[t-1]: the order in which the maps of x[t] = M[t] x[t-1] apply
};

namespace ops {
using parascan::chain_order;
}

}  // namespace parascan
