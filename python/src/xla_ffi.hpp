// The extension's XLA FFI targets (xla_ffi.cpp), built where JAX's FFI headers were found at build time.
#pragma once

#include <nanobind/nanobind.h>

namespace pyext {

/// {name: (CPU handler, CUDA handler)} as capsules, for jax.ffi.register_ffi_target("parascan_" + name).
nanobind::dict xla_targets();

}  // namespace pyext
