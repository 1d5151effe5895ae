// Note [Repro] (repro.h).
#include "kiln/frontend/compile/repro.h"

#include <fmt/format.h>

#include <fstream>

#include "kiln/base/error.h"
#include "kiln/base/philox.h"
#include "kiln/runtime/api/autograd.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/tensor_file.h"

namespace kiln::compile_detail {
namespace {

// The joint graph's inputs for this call (before it runs, so lifted parameters have the values
// the call reads) and copies of the arguments for the recorded run.
struct ReproInputs {
  std::vector<Tensor> joint_inputs;
  std::vector<Tensor> arguments;  // same layout and requires_grad as the caller's
};

ReproInputs repro_inputs(const Plan& plan, const std::vector<Tensor>& inputs) {
  ReproInputs r;
  for (const Tensor& t : inputs) {
    Tensor c = clone_with_layout(t);
    if (t.requires_grad()) c.requires_grad_(true);
    // The run writes into the arguments (write-backs): the recorded inputs are separate copies.
    r.joint_inputs.push_back(c.detach().clone());
    r.arguments.push_back(std::move(c));
  }
  for (const Tensor& p : plan.lifted)
    r.joint_inputs.push_back(p.detach().clone());
  const auto& graph_inputs = plan.joint->inputs();
  for (size_t k = r.joint_inputs.size(); k < graph_inputs.size(); ++k) {
    const ir::TensorType& t = graph_inputs[k]->type();
    r.joint_inputs.push_back(ones(t.sizes, TensorOptions().dtype(t.dtype).device(t.device)));
  }
  return r;
}

// Runs the compiled plan (forward, then backward with tangents of ones) from the capture's
// generator state; returns the joint graph's outputs in its order.
std::vector<Tensor> recorded_outputs(const std::shared_ptr<const Plan>& plan, ReproInputs& r) {
  RngStateGuard capture_state(
      {static_cast<uint64_t>(plan->capture_seed), static_cast<uint64_t>(plan->capture_offset)});
  std::vector<Tensor> joint_outputs;
  {
    std::vector<Tensor> outs = run_plan(plan, r.arguments);
    for (const Tensor& t : outs)
      joint_outputs.push_back(t.detach());
    for (auto [input, output] : plan->write_backs) {
      (void)output;
      const Tensor& written = input < r.arguments.size()
                                  ? r.arguments.at(input)
                                  : plan->lifted.at(input - r.arguments.size());
      joint_outputs.push_back(written.detach().clone());
    }
    if (plan->backward && !plan->differentiable_outputs.empty()) {
      std::vector<Tensor> diff, tangents;
      size_t tangent = r.arguments.size() + plan->lifted.size();
      for (size_t k : plan->differentiable_outputs) {
        diff.push_back(outs.at(k));
        tangents.push_back(r.joint_inputs.at(tangent++));
      }
      std::vector<Tensor> primals = r.arguments;
      primals.insert(primals.end(), plan->lifted.begin(), plan->lifted.end());
      std::vector<Tensor> wrt;
      for (size_t k : plan->grad_primals)
        wrt.push_back(primals.at(k));
      std::vector<Tensor> grads = autograd::grad(diff, wrt, tangents, /*retain_graph=*/false,
                                                 /*create_graph=*/false, /*allow_unused=*/true);
      for (size_t j = 0; j < grads.size(); ++j) {
        if (!plan->has_gradient.at(j)) continue;
        KILN_CHECK(grads[j].defined(), "the compiled backward gave no gradient for primal {}",
                   plan->grad_primals.at(j));
        joint_outputs.push_back(grads[j].detach());
      }
    }
  }
  return joint_outputs;
}

}  // namespace

std::string write_repro(const std::filesystem::path& dir, const std::string& name,
                        const std::shared_ptr<const Plan>& plan,
                        const std::vector<Tensor>& inputs) {
  if (plan->eager) return "no repro: this signature runs eagerly";
  if (!plan->joint) return "no repro: the function has graph breaks (see summary.txt)";
  ReproInputs r = repro_inputs(*plan, inputs);
  std::string note;
  TensorFile outputs;
  // The recorded run writes back into lifted tensors (Note [Lifted tensors]): it runs a copy
  // of the plan whose lifted tensors are copies too, so the caller's buffers see one call only.
  auto separate = std::make_shared<Plan>(*plan);
  for (Tensor& p : separate->lifted) {
    Tensor c = p.detach().clone();
    if (p.requires_grad()) c.requires_grad_(true);
    p = std::move(c);
  }
  try {
    outputs.tensors = recorded_outputs(separate, r);
    if (outputs.tensors.size() != plan->joint->outputs().size()) {
      note = fmt::format("no recorded outputs: the plan gave {} values for the joint graph's {}",
                         outputs.tensors.size(), plan->joint->outputs().size());
      outputs.tensors.clear();
    }
  } catch (const Error& e) {
    note = fmt::format("no recorded outputs: running the compiled plan failed: {}", e.what());
  }
  {
    std::ofstream kir(dir / "repro.kir");
    kir << fmt::format(
        "# Repro of the compiled function '{}', signature {}.\n"
        "# The joint graph as traced. `kiln run repro.kir` interprets it with eager kernels on "
        "the\n"
        "# recorded inputs in repro.inputs (the call's arguments, the lifted parameters, then one\n"
        "# tangent of ones per differentiable output) and compares each output with "
        "repro.outputs,\n"
        "# what the compiled code ({} backend) returned: forward outputs, write-backs, "
        "gradients.\n",
        name, plan->signature.str(), backend_name(plan->backend));
    if (!note.empty()) kir << "# " << note << "\n";
    kir << plan->joint->str();
  }
  TensorFile in;
  in.tensors = r.joint_inputs;
  save_tensors((dir / "repro.inputs").string(), in);
  if (!outputs.tensors.empty()) {
    outputs.meta.emplace_back("backend", std::string(backend_name(plan->backend)));
    save_tensors((dir / "repro.outputs").string(), outputs);
  }
  return note;
}

}  // namespace kiln::compile_detail
