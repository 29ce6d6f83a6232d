// parascan: parallel scans over any associative operator. This header brings the core and the host
// backend (no CUDA needed); include <parascan/cuda.cuh> from a .cu file for parascan::cuda, and the
// built-in operators from <parascan/ops/...>.
#pragma once

#include "config.hpp"
#include "error.hpp"
#include "host.hpp"
#include "inputs.hpp"
#include "layout.hpp"
#include "operator_traits.hpp"
#include "options.hpp"
#include "outputs.hpp"
#include "policy.hpp"
#include "shifted.hpp"
#include "version.hpp"
