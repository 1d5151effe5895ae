// A file of tensors: what KILN_DEBUG_DIR's repro stores its recorded inputs and outputs in, so
// that `kiln run` replays a compiled graph on the values it saw (frontend/compile/repro.h).
//
// The format is a line-oriented header per tensor followed by its raw elements, contiguous, in
// this machine's byte order:
//   kiln-tensors 1
//   meta <key> <value>                     zero or more, in order
//   tensor <dtype> <ndim> <size>...        then numel * itemsize bytes and a newline
//   end
// Strides, devices and requires_grad are not stored: loading gives contiguous CPU tensors.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln {

struct TensorFile {
  std::vector<std::pair<std::string, std::string>> meta;  // keys and values without whitespace
  std::vector<Tensor> tensors;

  // The value of `key`, or `fallback` when absent.
  std::string meta_value(const std::string& key, const std::string& fallback = "") const;
};

// Throws kiln::Error naming the path when it cannot be written, or for an undefined tensor or a
// meta key or value that holds whitespace.
void save_tensors(const std::string& path, const TensorFile& file);

// Throws kiln::Error naming the path and what is wrong for a missing, truncated or malformed
// file.
TensorFile load_tensors(const std::string& path);

}  // namespace kiln
