// KILN_DEBUG_DIR's replayable repro of one compiled signature (Note [Repro]).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kiln/frontend/compile/plan.h"

namespace kiln::compile_detail {

// Note [Repro]
// A repro is three files in a signature's debug folder:
//   repro.kir      the joint graph as traced (forward and backward, Note [Joint graph layout]),
//                  with a comment header saying what it is and how to replay it;
//   repro.inputs   the joint graph's inputs on the call that compiled it: the arguments, the
//                  lifted parameters, then a tangent of ones per differentiable output (what
//                  loss.backward() passes for a scalar loss); runtime/tensor_file.h format;
//   repro.outputs  what the compiled plan returned for those inputs: the forward outputs, the
//                  write-backs into arguments, then each gradient the joint graph has.
// `kiln run repro.kir` finds the other two beside it, interprets the joint graph with eager
// kernels on the recorded inputs and compares every output with the recorded one. So the repro
// replays outside the program, and a miscompile shows up as a difference.
//
// The recorded run uses the generator state the capture started from, so random ops read the
// blocks the joint graph's random nodes carry and the replay needs no generator state; the
// caller's generator is left as it was. The run does not touch the caller's tensors: arguments
// are copied, and gradients of lifted parameters come from autograd::grad, not .grad.

// Writes the repro for `plan` and the call's `inputs` into `dir`. Returns an empty string, or
// why no repro was written (an eager plan, graph breaks) or why it has no recorded outputs.
std::string write_repro(const std::filesystem::path& dir, const std::string& name,
                        const std::shared_ptr<const Plan>& plan, const std::vector<Tensor>& inputs);

}  // namespace kiln::compile_detail
