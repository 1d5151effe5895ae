// What anomaly mode records on each Node: the forward op and the user's call site, reported
// when the Node's backward produces NaN or throws.
#pragma once

#include <string>

namespace kiln::autograd {

struct AnomalyMetadata {
  std::string forward_op;  // "mul", "exp", or a custom Function's name
  std::string call_site;   // from kiln::current_call_site(); empty when unknown

  // "the forward op 'exp' called at file.cpp:12 in f" (or without the call site).
  std::string describe() const;
};

}  // namespace kiln::autograd
