// GPU tests of the contiguous-time memory pipeline (cuda/warp_io.cuh): stage counts 1..5, lanes owning
// 1, 2, 4 and 8 sixteen-byte pieces (the swizzled layouts), 4-, 8- and 2-byte elements side by side,
// base pointers 0..3 elements past an aligned address and sequences at any offset (chunk grids aligned
// to memory, starting before the sequence; the element-wise fallback for short ones), ragged tails,
// reverse and in place, whole long sequences under the default policy's longer tiles, against the fp64
// sequential reference of the linear recurrence.
#include "support/backend_cuda.cuh"
#include "support/harness.hpp"

#include <parascan/ops/linear_recurrence.hpp>

#include "support/numeric.hpp"

namespace {

using ptest::index_t;

/// x[t] = a[t] x[t-1] + b[t] over (2, 3, T) bdt views starting `shift` elements into their buffers,
/// with every option combination; gates stored as G, tokens as X, state and output fp32.
template <class Policy, class G, class X>
void check_pipeline(index_t B = 2, index_t D = 3, std::vector<index_t> lengths = {1, 7, 64, 255, 1000, 4096, 4099, 5000, 20011}) {
  using op_t = parascan::ops::linear_recurrence<float>;
  for (index_t T : lengths)
    for (int shift = 0; shift < 4; ++shift)
      for (const auto& f : ptest::all_flags()) {
        if ((T > 1000 || B * D > 6) && shift % 2 != (f.reverse ? 1 : 0)) continue;  // keep the long ones quick
        const index_t n = B * D * T;
        INFO("T=" << T << " shift=" << shift << " " << ptest::describe(f));
        ptest::fast_random g;
        ptest::buffer<G> a(n + shift);
        ptest::buffer<X> b(n + shift);
        ptest::buffer<float> y(n + shift), init(B * D), fin(B * D);
        ptest::fill(a, [&] { return ptest::store<G>(g.uniform(0.8, 0.999) * (g.uniform(0, 1) < 0.1 ? -1 : 1)); });
        ptest::fill(b, [&] { return ptest::store<X>(g.normal()); });
        ptest::fill(init, [&] { return float(g.normal()); });
        ptest::fill(y, [] { return ptest::poison<float>(); });
        ptest::fill(fin, [] { return ptest::poison<float>(); });
        const auto view = [&](auto* p) { return parascan::bdt(p + shift, B, D, T); };
        parascan::prefix_scan<Policy>(ptest::exec(), op_t{}, parascan::inputs(view(a.data()), view(b.data())),
                                      view(y.data()), ptest::options_for<float>(f, init.data(), fin.data()));
        y.download();
        fin.download();

        ptest::error_meter err;
        for (index_t s = 0; s < B * D; ++s) {
          const auto at = [&](auto& mirror, index_t t) -> auto& { return view(mirror.host.data()).at(s, t); };
          const double total = ptest::reference_scan(
              T, f.exclusive, f.reverse, f.with_initial ? double(init.host[s]) : 0.0,
              [&](double x, index_t t) { return ptest::to_double(at(a, t)) * x + ptest::to_double(at(b, t)); },
              [&](index_t t, double x) { err.add(at(y, t), x); });
          if (f.with_final) err.add(fin.host[s], total);
        }
        for (int k = 0; k < shift; ++k) CHECK(std::isnan(y.host[k]));  // nothing written before the view
        CHECK(err.relative() <= 64 * ptest::eps_of<float>());
      }
}

using parascan::combine_variant;

}  // namespace

TEST_CASE("pipeline: fp32 pairs, one 16-byte piece a lane, 1 to 5 stages") {
  check_pipeline<parascan::cuda_policy<128, 4, combine_variant::automatic, 1, 1>, float, float>();
  check_pipeline<parascan::cuda_policy<64, 4, combine_variant::automatic, 1, 2>, float, float>();
  check_pipeline<parascan::cuda_policy<128, 4, combine_variant::block, 1, 5>, float, float>();
}

TEST_CASE("pipeline: 2, 4 and 8 pieces a lane (swizzled), and pieces of 8 bytes") {
  check_pipeline<parascan::cuda_policy<64, 8, combine_variant::automatic, 1, 3>, float, float>();
  check_pipeline<parascan::cuda_policy<64, 16, combine_variant::block, 1, 2>, float, float>();
  check_pipeline<parascan::cuda_policy<32, 32, combine_variant::block, 1, 2>, float, float>();
  check_pipeline<parascan::cuda_policy<96, 2, combine_variant::automatic, 1, 4>, float, float>();
}

TEST_CASE("pipeline: bf16 gates with fp32 tokens, 2-byte elements") {
  check_pipeline<parascan::use_default_policy, ptest::bf16, float>();
  check_pipeline<parascan::cuda_policy<64, 16, combine_variant::automatic, 1, 3>, ptest::bf16, float>();
  check_pipeline<parascan::cuda_policy<64, 3, combine_variant::automatic, 1, 3>, ptest::bf16, ptest::bf16>();
}

// Many short sequences and the long tiles are one test case a dtype or policy: as one case each, they were
// the suite's longest under compute-sanitizer's racecheck (over 8 minutes), and tests/gpu_sanitize.sh runs
// each test case as a job of its own.
TEST_CASE("pipeline: many short sequences (more warps than the device runs at once), fp32, default policy") {
  check_pipeline<parascan::use_default_policy, float, float>(64, 200, {1, 5, 64, 130, 300});
}

TEST_CASE("pipeline: many short sequences (more warps than the device runs at once), fp32, block tiles of 128 x 4") {
  check_pipeline<parascan::cuda_policy<128, 4, combine_variant::block, 8, 2>, float, float>(64, 200, {3, 100, 600});
}

TEST_CASE("pipeline: many short sequences (more warps than the device runs at once), bf16, default policy") {
  check_pipeline<parascan::use_default_policy, ptest::bf16, ptest::bf16>(64, 200, {9, 127});
}

// 4800 sequences fill the device, so none is split. From about 4 long tiles (plan.hpp's runs_long_tiles:
// fp32 from 768 steps, bf16 from 3584) the warps run 8 (fp32) or 16 (bf16) items a thread: 768, 1000,
// 1024 and 2200 fp32 steps (1000 and 2200 with ragged tails) and 3584 and 4101 bf16 steps run the long
// tiles; 767 and 1029 fp32 steps (a long tail would pad too much) and 2048 bf16 steps the base tiles.
TEST_CASE("pipeline: whole long sequences under the default policy's long tiles (policy.hpp's long_sequences), fp32") {
  check_pipeline<parascan::use_default_policy, float, float>(32, 150, {767, 768, 1000, 1024, 1029, 2200});
}

TEST_CASE("pipeline: whole long sequences under the default policy's long tiles (policy.hpp's long_sequences), bf16") {
  check_pipeline<parascan::use_default_policy, ptest::bf16, ptest::bf16>(32, 150, {2048, 3584, 4101});
}

TEST_CASE("pipeline: the fused backward under a long_sequences policy (bf16 storage, 16 items a thread)") {
  // (The default runs 8 items at every length; a user's long_sequences policy still applies.) This policy
  // starts the long tiles at one tile, so that 4800 sequences of 1000 and 3000 steps (ragged tails that pad
  // no more than the base tiles' would) run the long kernel (and, reversed, its mirror image).
  using long_policy = parascan::long_sequences<parascan::cuda_policy<128, 8, combine_variant::warp, 4, 3>, 1,
                                               parascan::cuda_policy<128, 16, combine_variant::warp, 3, 2>>;
  const index_t B = 32, D = 150;
  for (index_t T : {1000, 3000})
    for (bool reverse : {false, true}) {
      INFO("T=" << T << " reverse=" << reverse);
      const index_t n = B * D * T;
      ptest::fast_random g;
      ptest::buffer<ptest::bf16> a(n), x(n), dy(n), da(n), db(n);
      ptest::fill(a, [&] { return ptest::store<ptest::bf16>(g.uniform(0.8, 0.999)); });
      ptest::fill(x, [&] { return ptest::store<ptest::bf16>(g.normal()); });
      ptest::fill(dy, [&] { return ptest::store<ptest::bf16>(g.normal()); });
      ptest::fill(da, [] { return ptest::poison<ptest::bf16>(); });
      ptest::fill(db, [] { return ptest::poison<ptest::bf16>(); });
      const auto view = [&](auto& buf) { return parascan::bdt(buf.data(), B, D, T); };
      parascan::backward_options<float> opts;
      opts.reverse = reverse;
      parascan::linear_recurrence_backward<long_policy>(ptest::exec(), view(a), view(x), view(dy), view(da), view(db),
                                                        opts);
      da.download(), db.download();
      // g[p] = dy[p] + a[p + 1] g[p + 1] in scan order p (time reversed when `reverse`); dL/db = g,
      // dL/da[p] = g[p] x[p - 1] (0 before the first step).
      ptest::error_meter err;
      for (index_t s = 0; s < B * D; ++s) {
        const auto at = [&](auto& buf, index_t p) -> auto& {
          return buf.host[std::size_t(s * T + (reverse ? T - 1 - p : p))];
        };
        double carried = 0;
        for (index_t p = T; p-- > 0;) {
          const double grad = ptest::to_double(at(dy, p)) + carried;
          err.add(ptest::to_double(at(db, p)), grad);
          err.add(ptest::to_double(at(da, p)), p == 0 ? 0.0 : grad * ptest::to_double(at(x, p - 1)));
          carried = ptest::to_double(at(a, p)) * grad;
        }
      }
      CHECK(err.relative() <= ptest::eps_of<ptest::bf16>() + 16 * ptest::eps_of<float>());
    }
}

TEST_CASE("pipeline: in place over the tokens, every stage refilled while outputs are written") {
  const index_t T = 70001;
  ptest::buffer<float> a(T), b(T);
  ptest::fill(a, [] { return float(ptest::uniform(0.9, 0.99)); });
  ptest::fill(b, [] { return float(ptest::normal()); });
  const std::vector<float> tokens = b.host;
  parascan::prefix_scan<parascan::cuda_policy<64, 4, combine_variant::block, 1, 4>>(
      ptest::exec(), parascan::ops::linear_recurrence<float>{},
      parascan::inputs(parascan::single(a.data(), T), parascan::single(b.data(), T)), parascan::single(b.data(), T));
  b.download();
  ptest::error_meter err;
  double x = 0;
  for (index_t t = 0; t < T; ++t) err.add(b.host[t], x = a.host[t] * x + tokens[t]);
  CHECK(err.relative() <= 8 * ptest::eps_of<float>());
}
