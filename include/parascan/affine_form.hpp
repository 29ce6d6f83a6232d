// Operators of affine recurrences x[t] = W[t] x[t-1] + b[t] (N x N matrices W, N-vectors b and x) may say
// so, so that the CUDA engine can walk sequences in time applying W x + b, N^2 multiply-adds a step,
// instead of composing the maps, N^3 a combine, when there are enough sequences to fill the device
// (cuda/affine.cuh). The inputs must then be W and b (Eigen fixed-size, either storage order, of the
// form's scalar), the output x, and the initial and final values N-vectors.
//
//   template <> struct parascan::affine_form<my_op> {
//     static constexpr bool available = true;
//     using scalar = float;          // float or double
//     static constexpr int size = 8;  // N: 2, 4, 8, 16 or 32
//   };
#pragma once

namespace parascan {

template <class Op>
struct affine_form {
  static constexpr bool available = false;
};

}  // namespace parascan
