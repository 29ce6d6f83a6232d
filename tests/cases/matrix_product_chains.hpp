// Cases for ops/matrix_product.hpp on long chains and on foreign storage: chains long enough that the CUDA
// engine's matrix strategy (cuda/matrix.cuh) scans the segment totals over several levels, reductions of
// those chains, sizes whose rows do not split evenly over a warp (N = 7, 12), and row-major matrices 4
// bytes off alignment (as NumPy and PyTorch arrays come), in fp32 and fp64, against an fp64 reference.
#include <cstring>

#include "support/matrix_product_check.hpp"

namespace {
using parascan::chain_order;
using ptest::index_t;

/// matrix_chain<Order> (reverse, exclusive as given, from an initial matrix, with the final one) and
/// matrix_chain_product<Order> over `count` chains of T matrices of type M, stored `offset` scalars into
/// their buffers; every output's relative Frobenius error against an fp64 sequential reference stays
/// below 4 eps sqrt(N) (1 + sqrt(T)) (as check_matrix_chain). `initial`: from initial matrices (else
/// from the identity); `general`: factors that are products of two reflections (one reflection is
/// symmetric, which would hide a factor read transposed).
template <class M, chain_order Order, bool TENSOR_CORES = false>
void check_chains(index_t count, index_t T, bool reverse, bool exclusive, int offset, bool initial = true,
                  bool general = false) {
  using S = typename M::Scalar;
  constexpr int N = M::RowsAtCompileTime;
  using MatD = Eigen::Matrix<double, N, N>;
  INFO("N=" << N << " count=" << count << " T=" << T << (reverse ? " reverse" : "") << (exclusive ? " exclusive" : "")
            << " offset=" << offset << (M::IsRowMajor ? " row-major" : "") << (initial ? "" : " no initial")
            << (general ? " general factors" : ""));
  const std::size_t n = std::size_t(count * T), mat = N * N;
  ptest::buffer<S> in(n * mat + offset), out(n * mat + offset), init(count * mat + offset), fin(count * mat + offset),
      total(count * mat + offset);
  ptest::fast_random g;
  std::vector<M> m(n), start(static_cast<std::size_t>(count));
  for (auto& x : m) {
    x = ptest::random_reflection<M>(g, g.uniform(0.95, 1.05));
    if (general) x = (x * ptest::random_reflection<M>(g)).eval();
  }
  for (auto& x : start) x = ptest::random_reflection<M>(g, g.uniform(0.5, 2));
  std::memcpy(in.host.data() + offset, m.data(), n * sizeof(M));
  std::memcpy(init.host.data() + offset, start.data(), start.size() * sizeof(M));
  for (auto* b : {&out, &fin, &total}) ptest::fill(*b, [] { return std::numeric_limits<S>::quiet_NaN(); });
  in.upload();
  init.upload();
  const auto at = [&](ptest::buffer<S>& b) { return reinterpret_cast<M*>(b.data() + offset); };

  parascan::options<M> o;
  o.reverse = reverse;
  o.exclusive = exclusive;
  o.initial = initial ? at(init) : nullptr;
  o.final = at(fin);
  const auto factors = parascan::bdt<const M>(at(in), count, 1, T);
  if constexpr (TENSOR_CORES)
    parascan::prefix_scan(ptest::exec(), parascan::ops::matrix_product_3xtf32<M, Order>{}, factors,
                          parascan::bdt(at(out), count, 1, T), o);
  else
    parascan::matrix_chain<Order>(ptest::exec(), factors, parascan::bdt(at(out), count, 1, T), o);
  o.exclusive = false;
  o.final = nullptr;
  if constexpr (TENSOR_CORES)
    parascan::reduce_scan(ptest::exec(), parascan::ops::matrix_product_3xtf32<M, Order>{}, factors, at(total), o);
  else
    parascan::matrix_chain_product<Order>(ptest::exec(), factors, at(total), o);
  for (auto* b : {&out, &fin, &total}) b->download();

  const auto read = [&](ptest::buffer<S>& b, std::size_t k) {
    M x;
    std::memcpy(static_cast<void*>(&x), b.host.data() + offset + k * mat, sizeof(M));
    return x;
  };
  double worst = 0;
  const auto add = [&](const M& got, const MatD& ref) { worst = std::max(worst, ptest::relative_frobenius(got, ref)); };
  for (index_t s = 0; s < count; ++s) {
    const MatD result = ptest::reference_scan(
        T, exclusive, reverse, initial ? MatD(start[std::size_t(s)].template cast<double>()) : MatD(MatD::Identity()),
        [&](const MatD& c, index_t t) -> MatD {
          const MatD x = m[std::size_t(s * T + t)].template cast<double>();
          return Order == chain_order::left_to_right ? MatD(c * x) : MatD(x * c);
        },
        [&](index_t t, const MatD& c) { add(read(out, std::size_t(s * T + t)), c); });
    add(read(fin, std::size_t(s)), result);
    add(read(total, std::size_t(s)), result);
  }
  // 3xTF32 rounds toward zero within each 8-term block: a bias that adds up over the chain (eps T).
  const double bias = TENSOR_CORES ? ptest::eps_of<S>() * double(T) : 0.0;
  CHECK(worst <= 4 * ptest::eps_of<S>() * std::sqrt(double(N)) * (1 + std::sqrt(double(T))) + bias);
}
}  // namespace

TEST_CASE("matrix_chain: long single chains, several levels of segment totals") {
  check_chains<Eigen::Matrix<float, 16, 16>, chain_order::left_to_right>(1, 4099, false, false, 0);
  check_chains<Eigen::Matrix<float, 16, 16>, chain_order::right_to_left>(1, 2500, true, true, 0);
  check_chains<Eigen::Matrix<float, 8, 8>, chain_order::right_to_left>(1, 20000, false, true, 0);
  check_chains<Eigen::Matrix<float, 32, 32>, chain_order::left_to_right>(3, 700, true, false, 0);
  check_chains<Eigen::Matrix<float, 32, 32>, chain_order::right_to_left>(1, 1000, false, false, 0);
}

TEST_CASE("matrix_chain: batches split over the device, their segment totals scanned a block a chain") {
  // Tens to hundreds of chains: a warp a segment, then each chain's segment totals (9 to 19 of them)
  // scanned by a block a chain on the GPU (plan.hpp's runs_product_blocks), and each segment rescanned.
  // Only types and orders the other cases instantiate (each costs CI minutes of nvcc).
  check_chains<Eigen::Matrix<float, 32, 32>, chain_order::left_to_right>(40, 300, false, false, 0, true, true);
  check_chains<Eigen::Matrix<float, 32, 32>, chain_order::right_to_left>(40, 300, true, true, 0, false, true);
  check_chains<Eigen::Matrix<float, 16, 16>, chain_order::left_to_right>(200, 200, true, false, 0, true, false);
  check_chains<Eigen::Matrix<double, 16, 16>, chain_order::left_to_right>(150, 150, false, true, 1, true, true);
}

TEST_CASE("matrix_chain: 24 x 24 and 32 x 32 products on the warp's 8 x 4 lane grid, general factors") {
  // Later factors on the right (left_to_right column-major, right_to_left row-major) from N = 24: each
  // lane owns a grid of entries, the factors are staged with padded columns (cuda/matrix.cuh); 16 x 16
  // keeps two lanes a row, and the other side a row a lane (its last four cases). General factors, so
  // that an operand read transposed shows.
  using R32 = Eigen::Matrix<float, 32, 32, Eigen::RowMajor | Eigen::DontAlign>;
  check_chains<Eigen::Matrix<float, 32, 32>, chain_order::left_to_right>(2, 900, false, true, 0, true, true);
  check_chains<Eigen::Matrix<float, 16, 16>, chain_order::left_to_right>(3, 1500, true, false, 0, false, true);
  check_chains<Eigen::Matrix<double, 32, 32>, chain_order::left_to_right>(1, 400, false, false, 0, true, true);
  check_chains<Eigen::Matrix<double, 16, 16>, chain_order::left_to_right>(70, 40, true, true, 0, true, true);
  check_chains<R32, chain_order::right_to_left>(2, 300, false, false, 1, true, true);
  check_chains<Eigen::Matrix<float, 24, 24>, chain_order::left_to_right>(2, 333, false, false, 0, true, true);
  check_chains<Eigen::Matrix<float, 32, 32>, chain_order::right_to_left>(2, 900, true, false, 0, true, true);
  check_chains<Eigen::Matrix<float, 24, 24>, chain_order::right_to_left>(3, 333, false, true, 0, false, true);
  check_chains<Eigen::Matrix<double, 32, 32>, chain_order::right_to_left>(1, 300, false, true, 0, true, true);
  check_chains<R32, chain_order::left_to_right>(2, 500, true, false, 1, true, true);
}

TEST_CASE("matrix_chain: ops::matrix_product_3xtf32 (tensor cores on the GPU where its warps share a product)") {
  // fp32 16 x 16 and 32 x 32 with later factors on the right run 3xTF32 mma (sm_80 on); the other order,
  // fp64 and other sizes run as matrix_product.
  using R32 = Eigen::Matrix<float, 32, 32, Eigen::RowMajor | Eigen::DontAlign>;
  check_chains<Eigen::Matrix<float, 32, 32>, chain_order::left_to_right, true>(2, 1000, false, true, 0, true, true);
  check_chains<Eigen::Matrix<float, 32, 32>, chain_order::left_to_right, true>(3, 700, true, false, 0, false, true);
  check_chains<Eigen::Matrix<float, 16, 16>, chain_order::left_to_right, true>(5, 1500, false, false, 0, true, true);
  check_chains<R32, chain_order::right_to_left, true>(2, 300, true, true, 1, true, true);
  check_chains<Eigen::Matrix<float, 16, 16>, chain_order::right_to_left, true>(3, 500, false, false, 0, true, true);
  check_chains<Eigen::Matrix<double, 32, 32>, chain_order::left_to_right, true>(1, 200, false, false, 0, true, true);
}

TEST_CASE("matrix_chain: fp64, sizes that do not split evenly over a warp") {
  check_chains<Eigen::Matrix<double, 8, 8>, chain_order::left_to_right>(2, 2000, false, false, 0);
  check_chains<Eigen::Matrix<double, 16, 16>, chain_order::right_to_left>(1, 300, true, false, 0);
  check_chains<Eigen::Matrix<float, 12, 12>, chain_order::left_to_right>(2, 500, false, true, 0);
  check_chains<Eigen::Matrix<float, 7, 7>, chain_order::right_to_left>(3, 300, true, false, 0);
}

TEST_CASE("matrix_chain: row-major matrices 4 bytes off alignment") {
  using R16 = Eigen::Matrix<float, 16, 16, Eigen::RowMajor | Eigen::DontAlign>;
  using R8 = Eigen::Matrix<double, 8, 8, Eigen::RowMajor | Eigen::DontAlign>;
  check_chains<R16, chain_order::left_to_right>(5, 257, false, false, 1);
  check_chains<R16, chain_order::right_to_left>(1, 3000, true, false, 1);
  check_chains<R8, chain_order::left_to_right>(3, 999, false, true, 1);
  check_chains<Eigen::Matrix<float, 16, 16, Eigen::DontAlign>, chain_order::right_to_left>(4, 100, false, false, 1);
}

TEST_CASE("matrix_chain: 2x2 fp32 chains, aligned and 4 bytes off, on both sides of 2048 steps") {
  // The CUDA engine moves Eigen's 16-byte fixed-size matrices as bytes (cuda/relocatable.cuh): 16-byte
  // pieces where a chunk is aligned, element by element where it is not; 2 items a thread below 2048
  // steps, 4 from there (ops/matrix_product.hpp's default policy); segments where the chains are few.
  using M2 = Eigen::Matrix<float, 2, 2>;
  using R2 = Eigen::Matrix<float, 2, 2, Eigen::RowMajor | Eigen::DontAlign>;
  check_chains<M2, chain_order::left_to_right>(3000, 1000, false, false, 0, true, true);
  check_chains<M2, chain_order::right_to_left>(700, 4097, true, true, 0, true, true);
  check_chains<R2, chain_order::left_to_right>(2000, 1500, true, false, 1, false, true);
  check_chains<R2, chain_order::right_to_left>(600, 3001, false, true, 1, true, true);
  check_chains<M2, chain_order::left_to_right>(5, 20011, false, false, 0, true, true);
}

TEST_CASE("matrix_chain: many short chains (the GPU walks them in time from 4x4, a line of each product a lane)") {
  // Enough chains for two warps a multiprocessor on any current GPU: 32 / N chains a warp. 2x2 chains
  // are scanned (a 16-byte state).
  using R4 = Eigen::Matrix<float, 4, 4, Eigen::RowMajor | Eigen::DontAlign>;
  check_chains<Eigen::Matrix<float, 2, 2>, chain_order::left_to_right>(16500, 37, false, false, 0, false, true);
  check_chains<Eigen::Matrix<float, 2, 2>, chain_order::right_to_left>(16500, 20, true, true, 0, true, true);
  check_chains<Eigen::Matrix<float, 4, 4>, chain_order::right_to_left>(8300, 33, false, false, 0, false, true);
  check_chains<Eigen::Matrix<float, 4, 4>, chain_order::left_to_right>(8300, 33, true, false, 0, true, true);
  check_chains<R4, chain_order::left_to_right>(8300, 29, true, true, 1, false, true);
  check_chains<R4, chain_order::right_to_left>(8300, 30, false, false, 1, true, true);
  check_chains<Eigen::Matrix<double, 4, 4>, chain_order::left_to_right>(8300, 9, false, true, 0, true, true);
  check_chains<Eigen::Matrix<float, 8, 8>, chain_order::left_to_right>(4200, 12, true, false, 0, false, true);
  check_chains<Eigen::Matrix<float, 16, 16>, chain_order::right_to_left>(2200, 5, false, true, 0, false, true);
}

TEST_CASE("matrix_chain: many long 4x4 fp32 chains (the GPU's register walk, its untested steps included)") {
  // 2200 chains: 275 warps of 8, two a multiprocessor on a 132-multiprocessor GPU. Forward, contiguous and
  // aligned chains longer than 96 steps run the walk's untested loop (cuda/chain_registers.cuh); reverse
  // and unaligned ones its tested loop.
  using R4 = Eigen::Matrix<float, 4, 4, Eigen::RowMajor | Eigen::DontAlign>;
  check_chains<Eigen::Matrix<float, 4, 4>, chain_order::left_to_right>(2200, 300, false, false, 0, false, true);
  check_chains<Eigen::Matrix<float, 4, 4>, chain_order::right_to_left>(2200, 301, false, true, 0, true, true);
  check_chains<Eigen::Matrix<float, 4, 4>, chain_order::left_to_right>(2200, 257, false, true, 0, false, true);
  check_chains<Eigen::Matrix<float, 4, 4>, chain_order::right_to_left>(2200, 200, false, false, 0, false, true);
  check_chains<Eigen::Matrix<float, 4, 4>, chain_order::left_to_right>(2200, 200, true, false, 0, true, true);
  check_chains<R4, chain_order::left_to_right>(2200, 150, false, false, 1, true, true);
}

TEST_CASE("matrix_chain: many 8x8 chains (the GPU's staged chain walk for prefixes)") {
  // 1100 chains: 275 warps of 4, from 1.75 a multiprocessor on a 132-multiprocessor GPU, where 8 x 8
  // prefixes walk (cuda/chain_walk.cuh) and their products keep the matrix strategy. Both orders,
  // exclusive, reverse, without and with initial matrices, fp64, and row-major fp64 8 bytes off alignment
  // (element by element staging); lengths around the walk's stages. Only types and orders the other cases
  // instantiate.
  using R8 = Eigen::Matrix<double, 8, 8, Eigen::RowMajor | Eigen::DontAlign>;
  check_chains<Eigen::Matrix<float, 8, 8>, chain_order::left_to_right>(1100, 150, false, false, 0, false, true);
  check_chains<Eigen::Matrix<float, 8, 8>, chain_order::right_to_left>(1100, 151, false, true, 0, true, true);
  check_chains<Eigen::Matrix<float, 8, 8>, chain_order::left_to_right>(1100, 9, true, true, 0, true, true);
  check_chains<Eigen::Matrix<double, 8, 8>, chain_order::left_to_right>(1000, 60, false, false, 0, true, true);
  check_chains<R8, chain_order::left_to_right>(1000, 41, true, false, 1, false, true);
}
