// Random programs for differential testing (issue 34): a seed picks 5 to 40 ops drawn across the
// op table's families (pointwise, broadcasting, views, in-place writes, reductions, softmax,
// matmul, cat), on random shapes that include 0 and 1, sometimes on aliasing inputs. The same
// program runs eagerly in float64 (the reference), eagerly in float32, and compiled on every CPU
// backend; outputs and gradients must agree within a tolerance that grows with the program's
// length. NaN equals NaN, and a program that throws must throw everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln_test::differential {

enum class StepKind {
  Unary,    // a bounded pointwise function of one value
  Binary,   // two values, broadcast
  Scalar,   // a value and a constant
  Reduce,   // sum / mean / amax / logsumexp over one dim, keepdim or not
  Softmax,  // softmax / log_softmax over one dim
  View,     // transpose, slice, unsqueeze, select, expand, reshape of a contiguous copy
  InPlace,  // a fresh copy written in place (add_, mul_), or a view of it written
  Matmul,   // tanh(a) @ tanh(a)^T, or a dot for 1-D
  Cat,      // two values joined along a dim
};

struct Step {
  StepKind kind;
  int variant = 0;    // which function of the family
  int a = 0, b = -1;  // operand value indices
  int64_t dim = 0;    // dim for reductions, views, cat
  int64_t start = 0;  // slice bounds, select index
  int64_t end = 0;
  bool keepdim = false;
  double constant = 0;
  kiln::Shape shape;  // target shape of expand / reshape
};

struct Program {
  uint64_t seed = 0;
  std::vector<kiln::Shape> input_shapes;
  // Input i is input alias_of[i] itself (the same tensor twice) when >= 0.
  std::vector<int> alias_of;
  bool inputs_require_grad = true;
  std::vector<Step> steps;
  std::vector<int> outputs;  // value indices returned
  std::string str() const;   // a readable listing, for failure messages
};

Program generate(uint64_t seed);

// Runs the program on `inputs` (one per input shape; aliases already applied by make_inputs).
std::vector<kiln::Tensor> run(const Program& p, const std::vector<kiln::Tensor>& inputs);

// The inputs of `p` in `dtype`, from the program's seed (the same values for every dtype).
std::vector<kiln::Tensor> make_inputs(const Program& p, kiln::DType dtype);

struct Verdict {
  bool agree = true;
  std::string detail;  // what differed, where
};

// Runs `p` in float64 eagerly (the reference), in float32 eagerly, and compiled with each CPU
// backend; compares outputs and the inputs' gradients with the reference.
Verdict check(const Program& p);

}  // namespace kiln_test::differential
