// forked_stream (include/parascan/cuda/forked_stream.cuh): work on the side stream runs after what the
// main stream had before the fork, and what the main stream gets after the join runs after the side's
// work; while the main stream is being captured, the side stream is the main stream. Each ordering is
// checked against a kernel that spins for milliseconds first, so that a missing fork or join reads the
// value from before.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <parascan/cuda/forked_stream.cuh>

namespace {

void check(cudaError_t e) { REQUIRE_MESSAGE(e == cudaSuccess, cudaGetErrorString(e)); }

/// Spins for `cycles` of the device's clock, then *to = value.
__global__ void late_store(int* to, int value, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  *to = value;
}
__global__ void copy_int(const int* from, int* to) { *to = *from; }

struct device_ints {
  int* p = nullptr;
  device_ints() {
    check(cudaMalloc(&p, 4 * sizeof(int)));
    check(cudaMemset(p, 0, 4 * sizeof(int)));
  }
  ~device_ints() { (void)cudaFree(p); }
  int at(int i) const {
    int v = 0;
    check(cudaMemcpy(&v, p + i, sizeof(int), cudaMemcpyDeviceToHost));
    return v;
  }
};

long long cycles_of_ms(double ms) {
  int device = 0, khz = 0;
  check(cudaGetDevice(&device));
  check(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  return static_cast<long long>(ms * khz);
}

}  // namespace

TEST_CASE("forked_stream: the side runs after the fork's past and before the join's future") {
  cudaStream_t main_stream = nullptr;
  check(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  for (int round = 0; round < 3; ++round) {  // (the pooled side stream taken again)
    device_ints x;
    late_store<<<1, 1, 0, main_stream>>>(x.p, 1, cycles_of_ms(20));  // before the fork
    {
      parascan::detail::forked_stream side(main_stream);
      REQUIRE(side.get() != main_stream);
      copy_int<<<1, 1, 0, side.get()>>>(x.p, x.p + 1);                  // sees 1
      late_store<<<1, 1, 0, side.get()>>>(x.p + 2, 2, cycles_of_ms(20));  // before the join
    }
    copy_int<<<1, 1, 0, main_stream>>>(x.p + 2, x.p + 3);  // after the join: sees 2
    check(cudaGetLastError());
    check(cudaStreamSynchronize(main_stream));
    CHECK(x.at(1) == 1);
    CHECK(x.at(3) == 2);
  }
  check(cudaStreamDestroy(main_stream));
}

TEST_CASE("forked_stream: the legacy default stream, and a stream being captured stays itself") {
  {
    device_ints x;
    late_store<<<1, 1>>>(x.p, 1, cycles_of_ms(20));
    {
      parascan::detail::forked_stream side(nullptr);
      copy_int<<<1, 1, 0, side.get()>>>(x.p, x.p + 1);
      late_store<<<1, 1, 0, side.get()>>>(x.p + 2, 2, cycles_of_ms(20));
    }
    copy_int<<<1, 1>>>(x.p + 2, x.p + 3);
    check(cudaDeviceSynchronize());
    CHECK(x.at(1) == 1);
    CHECK(x.at(3) == 2);
  }
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  {
    parascan::detail::forked_stream side(s);
    CHECK(side.get() == s);
  }
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(s, &graph));
  check(cudaGraphDestroy(graph));
  check(cudaStreamDestroy(s));
}
