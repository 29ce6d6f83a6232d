// Which memory parascan::cuda takes: the current device's and managed memory; host memory (pageable or
// pinned) and another device's memory are refused with the argument named and nothing written. The
// other-device cases need two GPUs (skipped with a message on one). Temporary storage comes from
// parascan's own memory pool, which keeps it across synchronisations.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <parascan/cuda.cuh>
#include <parascan/ops/basic.hpp>
#include <vector>

namespace {

using parascan::index_t;

void check(cudaError_t e) { REQUIRE_MESSAGE(e == cudaSuccess, cudaGetErrorString(e)); }

/// Device (or managed) floats, filled with `value`.
struct device_floats {
  float* p = nullptr;
  index_t n;
  device_floats(index_t count, float value, bool managed = false) : n(count) {
    check(managed ? cudaMallocManaged(&p, n * sizeof(float)) : cudaMalloc(&p, n * sizeof(float)));
    const std::vector<float> h(std::size_t(n), value);
    check(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyDefault));
  }
  ~device_floats() { (void)cudaFree(p); }
  std::vector<float> read() const {
    std::vector<float> h(static_cast<std::size_t>(n));
    check(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDefault));
    return h;
  }
};

bool all_nan(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isnan(x)) return false;
  return true;
}

}  // namespace

TEST_CASE("host memory, pageable or pinned, is refused with the argument named, nothing written") {
  const index_t T = 1000;
  device_floats y(T, NAN);
  std::vector<float> pageable(T, 1.0f);
  float* pinned = nullptr;
  check(cudaMallocHost(&pinned, T * sizeof(float)));
  for (float* host : {pageable.data(), pinned})
    CHECK_THROWS_WITH_AS(
        parascan::cumsum(parascan::cuda{}, parascan::bdt<const float>(host, 1, 1, T), parascan::bdt(y.p, 1, 1, T)),
        doctest::Contains("inputs[0].data: device memory"), parascan::error);
  device_floats x(T, 1.0f);
  CHECK_THROWS_WITH_AS(
      parascan::cumsum(parascan::cuda{}, parascan::bdt<const float>(x.p, 1, 1, T), parascan::bdt(pinned, 1, 1, T)),
      doctest::Contains("output.data: device memory"), parascan::error);
  check(cudaFreeHost(pinned));
  CHECK(all_nan(y.read()));
}

__global__ void spin_for(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

TEST_CASE("host offsets, pageable or pinned, may change as soon as the call returns") {
  // The offsets are uploaded for the kernels: from pageable memory the copy has taken them when the call
  // returns; page-locked ones would be read when the stream reaches the copy (here after a busy kernel), so
  // parascan copies those first. Either way the caller's array may change at once.
  const index_t N = 300, D = 3;
  std::vector<index_t> lengths(static_cast<std::size_t>(N));
  index_t total = 0;
  for (index_t i = 0; i < N; ++i) total += lengths[std::size_t(i)] = 1 + (i * 37) % 50;
  device_floats x(total * D, 1.0f);
  for (const bool pinned : {false, true}) {
    INFO((pinned ? "page-locked" : "pageable") << " offsets");
    std::vector<index_t> pageable(static_cast<std::size_t>(N) + 1);
    index_t* offsets = pageable.data();
    if (pinned) check(cudaMallocHost(&offsets, (N + 1) * sizeof(index_t)));
    offsets[0] = 0;
    for (index_t i = 0; i < N; ++i) offsets[i + 1] = offsets[i] + lengths[std::size_t(i)];
    device_floats y(total * D, NAN);
    spin_for<<<1, 1>>>(20000000);  // about 10 ms: the call's copies queue behind it
    parascan::cumsum(parascan::cuda{}, parascan::packed_td<const float>(x.p, offsets, N, D),
                     parascan::packed_td(y.p, offsets, N, D));
    for (index_t i = 0; i <= N; ++i) offsets[i] = 0;  // every sequence empty, were they read now
    const std::vector<float> got = y.read();
    index_t wrong = 0, row = 0;
    for (index_t i = 0; i < N; ++i)
      for (index_t t = 0; t < lengths[std::size_t(i)]; ++t, ++row)
        for (index_t c = 0; c < D; ++c) wrong += got[std::size_t(row * D + c)] != float(t + 1);
    CHECK(wrong == 0);
    if (pinned) check(cudaFreeHost(offsets));
  }
}

TEST_CASE("managed memory is taken") {
  const index_t T = 4097;
  device_floats x(T, 1.0f, true), y(T, NAN, true);
  parascan::cumsum(parascan::cuda{}, parascan::bdt<const float>(x.p, 1, 1, T), parascan::bdt(y.p, 1, 1, T));
  check(cudaDeviceSynchronize());
  const std::vector<float> got = y.read();
  for (index_t t = 0; t < T; ++t) REQUIRE(got[std::size_t(t)] == float(t + 1));
}

TEST_CASE("another device's memory is refused, naming both devices, nothing written") {
  int devices = 0;
  check(cudaGetDeviceCount(&devices));
  if (devices < 2) {
    MESSAGE("skipped: one CUDA device (the other-device checks need two)");
    return;
  }
  const index_t T = 1000;
  check(cudaSetDevice(1));
  device_floats other(T, 1.0f);
  const std::vector<index_t> offsets_host = {0, 400, T};
  index_t* other_offsets = nullptr;
  check(cudaMalloc(&other_offsets, offsets_host.size() * sizeof(index_t)));
  check(cudaMemcpy(other_offsets, offsets_host.data(), offsets_host.size() * sizeof(index_t), cudaMemcpyHostToDevice));
  check(cudaSetDevice(0));
  device_floats x(T, 1.0f), y(T, NAN);
  CHECK_THROWS_WITH_AS(
      parascan::cumsum(parascan::cuda{}, parascan::bdt<const float>(other.p, 1, 1, T), parascan::bdt(y.p, 1, 1, T)),
      doctest::Contains("inputs[0].data: memory of the current device (0), got memory of device 1"), parascan::error);
  CHECK_THROWS_WITH_AS(
      parascan::cumsum(parascan::cuda{}, parascan::bdt<const float>(x.p, 1, 1, T), parascan::bdt(other.p, 1, 1, T)),
      doctest::Contains("output.data: memory of the current device (0)"), parascan::error);
  CHECK_THROWS_WITH_AS(parascan::cumsum(parascan::cuda{}, parascan::packed_td<const float>(x.p, other_offsets, 2, 1),
                                        parascan::packed_td(y.p, other_offsets, 2, 1)),
                       doctest::Contains("got memory of device 1"), parascan::error);
  CHECK(all_nan(y.read()));
  check(cudaSetDevice(1));
  check(cudaFree(other_offsets));
  check(cudaSetDevice(0));
}

TEST_CASE("temporary storage comes from parascan's own pool, kept across synchronisations") {
  // One sequence of 2^22 steps: a single pass whose tile status comes from the default temp_allocator.
  const index_t T = index_t(1) << 22;
  device_floats x(T, 1.0f), y(T, NAN);
  int device = 0;
  check(cudaGetDevice(&device));
  cudaMemPool_t cuda_default = nullptr;
  check(cudaDeviceGetDefaultMemPool(&cuda_default, device));
  std::uint64_t default_threshold = 0, threshold_after = 0;
  check(cudaMemPoolGetAttribute(cuda_default, cudaMemPoolAttrReleaseThreshold, &default_threshold));
  parascan::cumsum(parascan::cuda{}, parascan::bdt<const float>(x.p, 1, 1, T), parascan::bdt(y.p, 1, 1, T));
  check(cudaDeviceSynchronize());
  const std::vector<float> h = y.read();
  bool exact = true;  // integers below 2^24: exact in fp32
  for (index_t t = 0; t < T; ++t) exact = exact && h[std::size_t(t)] == float(t + 1);
  CHECK(exact);
  int pools = 0;
  check(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
  const cudaMemPool_t pool = parascan::detail::temp_pool(device);
  if (!pools) {
    CHECK(pool == nullptr);  // CUDA's default stream-ordered allocation then
    return;
  }
  REQUIRE(pool != nullptr);
  std::uint64_t reserved = 0, used = 0, threshold = 0;
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  CHECK(reserved > 0);  // still mapped after the synchronisation
  CHECK(used == 0);     // every temporary freed
  CHECK(threshold == parascan::detail::temp_pool_keeps);
  check(cudaMemPoolGetAttribute(cuda_default, cudaMemPoolAttrReleaseThreshold, &threshold_after));
  CHECK(threshold_after == default_threshold);  // CUDA's default pool, the caller's, left as it was
}
