// The seed of a test executable's randomness: PARASCAN_TEST_SEED when set (to repeat a run exactly),
// else a fresh one. The test mains print it when a test fails.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>

namespace ptest {

inline std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    if (const char* text = std::getenv("PARASCAN_TEST_SEED")) return std::uint64_t(std::strtoull(text, nullptr, 10));
    std::random_device device;
    return (std::uint64_t(device()) << 32) ^ device();
  }();
  return seed;
}

/// The shared generator every random input comes from (fast_random seeds itself from it too).
inline std::mt19937_64& rng() {
  static std::mt19937_64 generator{test_seed()};
  return generator;
}

}  // namespace ptest
