// doctest main for GPU test executables: skips the whole executable (exit 77, CTest's SKIP_RETURN_CODE)
// when the machine has no CUDA device, so that CI without a GPU compiles them and runs the rest; prints the
// run's seed when a test fails. Compiled a second time for executables built for one architecture alone
// (tests/CMakeLists.txt): PARASCAN_TEST_DEVICE_CC (e.g. 90) skips them on other devices (the message on
// stderr, so that a list of test cases stays empty), PARASCAN_TEST_ONLY_CASES restricts them to the test
// cases it matches (doctest's wildcards; also for --list-test-cases).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>
#include <cstdio>

#include "seed.hpp"

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
#if defined(PARASCAN_TEST_DEVICE_CC)
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    std::fprintf(stderr, "the device's compute capability: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  if (10 * major + minor != PARASCAN_TEST_DEVICE_CC) {
    std::fprintf(stderr, "skipped: built for compute capability %d, the device has %d.%d\n", PARASCAN_TEST_DEVICE_CC,
                 major, minor);
    return 77;
  }
#endif
  const unsigned long long seed = ptest::test_seed();
  doctest::Context context(argc, argv);
#if defined(PARASCAN_TEST_ONLY_CASES)
  context.addFilter("test-case", PARASCAN_TEST_ONLY_CASES);
#endif
  const int result = context.run();
  if (result != 0) std::printf("random seed: PARASCAN_TEST_SEED=%llu repeats this run\n", seed);
  return result;
}
