// The one exception type parascan throws: the message names the argument and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace parascan {

/// Thrown on bad input (before anything is written) and on CUDA errors (with CUDA's message).
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
[[noreturn]] inline void fail(const std::string& argument, const std::string& expected) {
  throw error("parascan: " + argument + ": " + expected);
}
/// For literal texts (nothing is built unless the check fails); checks whose texts are computed write
/// `if (!ok) fail(...)` so that the text is computed only then.
template <class Argument, class Expected>
inline void require(bool ok, const Argument& argument, const Expected& expected) {
  if (!ok) fail(argument, expected);
}
}  // namespace detail
}  // namespace parascan
