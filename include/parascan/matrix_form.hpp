// Operators whose state is a square matrix combined by a matrix product may say so, so that the CUDA
// engine spreads each product over a warp's lanes instead of one thread (cuda/matrix.cuh): a state of
// N x N scalars (4 kB at N = 32 in fp32) does not fit a thread's registers, and one thread per segment
// leaves most of the device idle on a few chains.
//
//   template <> struct parascan::matrix_form<my_op> {
//     static constexpr bool available = true;
//     using scalar = float;                   // float or double
//     static constexpr int size = 16;         // N
//     static constexpr bool later_on_right = true;  // op(P, M) = P M in the stored (column-major) sense
//   };
//
// Optional: `static constexpr bool tensor_cores = true;` lets fp32 products of N = 16 or 32 run on tensor
// cores as 3xTF32 (ops::matrix_product_3xtf32 says what that costs in accuracy).
//
// The state must be exactly N * N scalars, column by column (Eigen's default storage; a row-major type
// stores the transpose, which flips the side: later_on_right = !(its order's side)); lift, project and
// seed the identity map (one input, one output, both of the state's type).
#pragma once

#include <type_traits>

namespace parascan {

template <class Op>
struct matrix_form {
  static constexpr bool available = false;
};

/// Whether a matrix_form opts in to tensor cores.
template <class Form, class = void>
struct uses_tensor_cores : std::false_type {};
template <class Form>
struct uses_tensor_cores<Form, std::void_t<decltype(Form::tensor_cores)>> : std::bool_constant<Form::tensor_cores> {};

}  // namespace parascan
