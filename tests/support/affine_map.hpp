// A small non-commutative test operator for the fuzz tests: x[t] = a[t] x[t-1] + b[t] as the composition
// of affine maps x -> a x + b in time order, in fp64. Writes x (project), continues from a given x (seed).
#pragma once

#include <parascan/config.hpp>

namespace ptest {

struct affine_map {
  struct value_type {
    double a, b;
  };
  PARASCAN_HD value_type identity() const { return {1.0, 0.0}; }
  PARASCAN_HD value_type operator()(value_type e, value_type l) const { return {e.a * l.a, l.a * e.b + l.b}; }
  PARASCAN_HD value_type lift(double a, double b) const { return {a, b}; }
  PARASCAN_HD double project(value_type s) const { return s.b; }
  PARASCAN_HD value_type seed(double x) const { return {0.0, x}; }  // the constant map to x
};

}  // namespace ptest
