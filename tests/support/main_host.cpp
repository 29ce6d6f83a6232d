// doctest main for host test executables: prints the run's seed when a test fails.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "seed.hpp"

int main(int argc, char** argv) {
  const unsigned long long seed = ptest::test_seed();
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (result != 0) std::printf("random seed: PARASCAN_TEST_SEED=%llu repeats this run\n", seed);
  return result;
}
