// doctest main for GPU test executables: skips the whole executable (exit 77, CTest's SKIP_RETURN_CODE)
// when the machine has no CUDA device, so that CI without a GPU compiles them and runs the rest, or when
// PARASCAN_TEST_DEVICE_CC names another compute capability than the device's (e.g. 90: an executable built
// for sm_90 alone); prints the run's seed when a test fails.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#include "seed.hpp"

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  if (const char* wanted = std::getenv("PARASCAN_TEST_DEVICE_CC")) {
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
      return 1;
    if (std::atoi(wanted) != 10 * major + minor) {
      std::printf("skipped: built for compute capability %s, the device has %d.%d\n", wanted, major, minor);
      return 77;
    }
  }
  const unsigned long long seed = ptest::test_seed();
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (result != 0) std::printf("random seed: PARASCAN_TEST_SEED=%llu repeats this run\n", seed);
  return result;
}
