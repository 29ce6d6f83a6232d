// doctest main for GPU test executables: skips the whole executable (exit 77, CTest's SKIP_RETURN_CODE)
// when the machine has no CUDA device, so that CI without a GPU compiles them and runs the rest.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>
#include <cstdio>

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
