// Which element types the engine moves as their bytes (16-, 8- or 4-byte vector loads and stores, cp.async
// into shared memory) although they are not trivially copyable: Thrust's customization point,
// thrust::proclaim_trivially_relocatable (THRUST_PROCLAIM_TRIVIALLY_RELOCATABLE(T) for a user's type), and
// here Eigen's fixed-size matrices, whose copy constructors copy their coefficients and nothing else. Moved
// element by element through those constructors, a 2 x 2 fp32 prefix scan read 72.5% of the copy floor
// where the same products on a trivially copyable struct read 79-88% (H100, 2026-11-28, policy_sweep part
// matrix2): synchronous scalar loads, and 4-byte shared-memory accesses 64 bytes apart across lanes.
#pragma once

#include <thrust/type_traits/is_trivially_relocatable.h>

namespace Eigen {
template <typename Scalar, int Rows, int Cols, int Options, int MaxRows, int MaxCols>
class Matrix;
}  // namespace Eigen

THRUST_NAMESPACE_BEGIN
/// An Eigen matrix of fixed size (its coefficients in place, no heap pointer) relocates as its bytes.
template <class S, int R, int C, int O, int MR, int MC>
struct proclaim_trivially_relocatable<Eigen::Matrix<S, R, C, O, MR, MC>>
    : integral_constant<bool, (R > 0 && C > 0 && ::cuda::std::is_trivially_copyable<S>::value)> {};
THRUST_NAMESPACE_END

namespace parascan::engine {

/// Whether the engine may move values of T as raw bytes. (Thrust's own algorithms see the proclamation
/// above only where this header is included; either answer is correct for them.)
template <class T>
constexpr bool moves_as_bytes = THRUST_NS_QUALIFIER::is_trivially_relocatable<T>::value;

}  // namespace parascan::engine
