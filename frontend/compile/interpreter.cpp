#include "kiln/frontend/compile/interpreter.h"

#include "kiln/ir/printer.h"

#include <cctype>
#include <unordered_map>

#include "kiln/base/error.h"
#include "kiln/base/profiler.h"
#include "kiln/codegen/compiled_kernel.h"
#include "kiln/ir/symbols.h"
#include "kiln/kernel_ir/kernel_interpreter.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernel_args.h"

namespace kiln {
namespace {

constexpr size_t kKeep = SIZE_MAX;  // a graph output: never released

// "%3 = mm(%x, %2)  # model.cpp:12 in forward"
std::string describe(const ir::Graph& g, const ir::Node& node) {
  return ir::describe_node(node, ir::value_names(g));
}

// Checks the inputs against the graph's input types and returns the values of its symbols
// (Note [Symbolic types]): a symbolic input's sizes bind them instead of matching the hints.
std::vector<int64_t> check_inputs(const ir::Graph& g, const std::vector<Tensor>& inputs,
                                  const std::vector<int64_t>* known) {
  KILN_CHECK(inputs.size() == g.inputs().size(), "interpret: the graph takes {} inputs, got {}",
             g.inputs().size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType& want = g.input(i)->type();
    const Tensor& t = inputs[i];
    KILN_CHECK(t.defined(), "interpret: input {} is an undefined tensor; expected {}", i,
               want.str());
    KILN_CHECK(t.dtype() == want.dtype && t.device() == want.device &&
                   (want.is_symbolic() || t.sizes() == want.sizes),
               "interpret: input {} has type {}, but the graph expects {}", i,
               ir::TensorType::of(t).str(), want.str());
  }
  if (g.symbol_hints().empty()) return {};
  if (known == nullptr) return ir::bind_symbols(g, inputs, "interpret");
  KILN_CHECK(known->size() == g.symbol_hints().size(),
             "interpret: {} symbol values for a graph of {} symbols", known->size(),
             g.symbol_hints().size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType& want = g.input(i)->type();
    if (!want.is_symbolic()) continue;
    const Shape& have = inputs[i].impl()->sizes();
    bool fits = have.size() == want.sym_sizes.size();
    for (size_t d = 0; fits && d < have.size(); ++d)
      fits = want.sym_sizes[d].evaluate(*known) == have[d];
    KILN_CHECK(fits,
               "interpret: input {} has sizes {}, but the graph expects {} at its symbols' values",
               i, shape_str(have), want.str());
  }
  return *known;
}

// The values of `kernel`'s size parameters, each named after its symbol (Note [Size
// parameters]), from the symbols' values.
// Each size parameter's value at this call's symbols (FusionGroupAttrs::size_args).
std::vector<int64_t> size_arguments(const ir::FusionGroupAttrs& group,
                                    std::span<const int64_t> symbols) {
  const kir::Kernel& kernel = *group.kernel;
  KILN_CHECK(group.size_args.size() == kernel.sizes().size(),
             "{}: the kernel takes {} size parameters, and the group says what {} of them are",
             kernel.name, kernel.sizes().size(), group.size_args.size());
  std::vector<int64_t> out;
  out.reserve(group.size_args.size());
  for (const SymInt& s : group.size_args)
    out.push_back(s.evaluate(symbols));
  return out;
}

// A copy of a random op's attributes with the replay's seed and shifted offset.
ir::OpAttrs replayed_attrs(const ir::Node& node, const RandomReplay& random) {
  ir::OpAttrs attrs(node.op()->attrs, node.attrs());
  for (const AttrField& f : node.op()->attrs->fields(attrs.mutable_get())) {
    auto* v = std::get_if<int64_t*>(&f.ref);
    if (v == nullptr) continue;
    if (std::string_view(f.name) == "seed") **v = random.seed;
    if (std::string_view(f.name) == "offset") **v += random.offset_shift;
  }
  return attrs;
}

// Strides agree where they matter: on dims of more than one element.
bool same_strides(const Shape& sizes, const Shape& a, const Shape& b) {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1 && a[d] != b[d]) return false;
  return true;
}

// A lowered fusion group: its kernel addresses every argument with the strides of its IR type,
// so a tensor laid out otherwise would be read wrongly; the types are guarded at the plan's entry
// and follow from the op table's rules inside it, so a mismatch is an internal error.
std::vector<Tensor> run_fusion_kernel(const ir::Node& node, const std::vector<Tensor>& args,
                                      std::span<const int64_t> symbols) {
  const kir::Kernel& kernel = *node.fusion_group().kernel;
  std::vector<Tensor> buffers = args;
  // A symbolic type at this call's symbols; an integer type is used as it is (the launch is
  // the hot path of a plan: no copies for static graphs).
  ir::TensorType evaluated;
  auto at_call = [&](const ir::TensorType& t) -> const ir::TensorType& {
    if (!t.is_symbolic()) return t;
    evaluated = ir::evaluate_type(t, symbols);
    return evaluated;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::TensorType& t = at_call(node.input(i)->type());
    // The gradients autograd hands to a backward graph come in any layout (an expanded scalar
    // from sum().backward(), say) although the graph types them contiguous: copy those.
    if (t.is_contiguous() && args[i].sizes() == t.sizes &&
        !same_strides(t.sizes, args[i].strides(), t.effective_strides()))
      buffers[i] = args[i].contiguous();
    KILN_CHECK(buffers[i].sizes() == t.sizes && buffers[i].dtype() == t.dtype &&
                   same_strides(t.sizes, buffers[i].strides(), t.effective_strides()),
               "{}: argument {} has type {} with strides {}, but the kernel was generated for {}",
               kernel.name, i, ir::TensorType::of(args[i]).str(), shape_str(args[i].strides()),
               t.str());
  }
  std::vector<Tensor> outputs;
  for (const ir::Value* v : node.outputs()) {
    const ir::TensorType& t = at_call(v->type());
    outputs.push_back(empty_tensor(t.sizes, t.dtype, t.device));
    buffers.push_back(outputs.back());
  }
  std::vector<int64_t> sizes;
  if (!symbols.empty()) sizes = size_arguments(node.fusion_group(), symbols);
  const auto& compiled = node.fusion_group().compiled;
  profiler::RecordScope scope(profiler::ScopeKind::Kernel, kernel.name,
                              compiled ? compiled->backend() : "interpreter");
  if (compiled) {
    // Outputs are fresh allocations, so they overlap no argument (the compiled code's noalias
    // assumption); the checks above fixed the layouts the kernel was generated for. The
    // pointers are the tensors' own, host or device: a CUDA group's kernel reads device memory
    // (raw_data() is for host reads and refuses CUDA tensors).
    std::vector<void*> ptrs;
    ptrs.reserve(buffers.size());
    for (const Tensor& t : buffers)
      ptrs.push_back(t.numel() > 0 ? t.impl()->data() : nullptr);
    compiled->launch_sized(ptrs, sizes);
  } else {
    // The kernel-IR interpreter reads and writes host memory.
    for (const Tensor& t : buffers)
      KILN_CHECK(t.device().is_cpu(),
                 "{}: fusion group on {} has no compiled kernel (the kernel-IR interpreter runs "
                 "host tensors only); compile it with Backend::CUDA",
                 kernel.name, t.device().str());
    kir::run_kernel(kernel, buffers, sizes);
  }
  return outputs;
}

std::vector<Tensor> run_node(const ir::Node& node, const std::vector<Tensor>& args,
                             const RandomReplay* random, std::span<const int64_t> symbols) {
  switch (node.kind()) {
    case ir::NodeKind::Constant:
      return {node.constant().value};
    case ir::NodeKind::Op:
      if (random != nullptr && node.op()->has(kRandom)) {
        ir::OpAttrs attrs = replayed_attrs(node, *random);
        return call_op(*node.op(), args, attrs.get());
      }
      // Note [Symbolic size attributes]: sizes over symbols at this call's values.
      if (!symbols.empty() && ir::attrs_are_symbolic(node.op()->attrs, node.attrs())) {
        ir::OpAttrs attrs = ir::evaluate_attrs(node.op()->attrs, node.attrs(), symbols);
        return call_op(*node.op(), args, attrs.get());
      }
      return call_op(*node.op(), args, node.attrs());
    case ir::NodeKind::FusionGroup:
      if (node.fusion_group().kernel) return run_fusion_kernel(node, args, symbols);
      {
        // An unlowered symbolic group runs at the enclosing call's symbols: its own inputs
        // need not hold each symbol as a dim of its own.
        const ir::Graph& sub = *node.fusion_group().subgraph;
        std::vector<int64_t> known(symbols.begin(), symbols.end());
        bool pass_symbols =
            !sub.symbol_hints().empty() && known.size() == sub.symbol_hints().size();
        return interpret(sub, args, random, pass_symbols ? &known : nullptr);
      }
    case ir::NodeKind::Fallback:
      KILN_CHECK(static_cast<bool>(node.fallback().fn),
                 "prim.fallback '{}' has no callable (parsed from text?); only a traced graph "
                 "can run its fallbacks",
                 node.fallback().name);
      return node.fallback().fn(args);
    case ir::NodeKind::Param:
      break;
  }
  KILN_ERROR("interpret: unexpected node kind {}", node.kind_name());
}

}  // namespace

std::vector<Tensor> interpret(const ir::Graph& g, const std::vector<Tensor>& inputs,
                              const RandomReplay* random, const std::vector<int64_t>* known) {
  const std::vector<int64_t> symbols = check_inputs(g, inputs, known);
  std::vector<ir::Node*> nodes = g.nodes();
  // Slots: one per value. last_use[slot] is the index of the last node reading it, after which
  // the slot is cleared so that the tensor can be freed.
  std::unordered_map<const ir::Value*, size_t> slot;
  std::vector<size_t> last_use;
  for (const ir::Node* node : nodes) {
    for (const ir::Value* v : node->outputs()) {
      slot.emplace(v, last_use.size());
      last_use.push_back(0);
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (const ir::Value* v : nodes[n]->inputs()) {
      auto it = slot.find(v);
      KILN_CHECK(it != slot.end(), "interpret: {} reads a value defined outside the graph",
                 nodes[n]->kind_name());
      if (last_use[it->second] != kKeep) last_use[it->second] = n;
    }
  }
  for (const ir::Value* v : g.outputs())
    last_use.at(slot.at(v)) = kKeep;

  std::vector<Tensor> env(last_use.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    env[slot.at(g.input(i))] = inputs[i];

  std::vector<Tensor> args;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const ir::Node& node = *nodes[n];
    if (node.kind() == ir::NodeKind::Param) continue;
    args.clear();
    for (const ir::Value* v : node.inputs()) {
      const Tensor& t = env[slot.at(v)];
      KILN_CHECK(t.defined(), "interpret: {} reads a value before the node that defines it",
                 describe(g, node));
      args.push_back(t);
    }
    std::vector<Tensor> results;
    try {
      results = run_node(node, args, random, symbols);
    } catch (const Error& e) {
      KILN_ERROR("{}\n  while interpreting {}", e.what(), describe(g, node));
    }
    KILN_CHECK(results.size() == node.num_outputs(),
               "interpret: {} returned {} tensors for {} outputs", describe(g, node),
               results.size(), node.num_outputs());
    for (size_t i = 0; i < results.size(); ++i)
      env[slot.at(node.output(i))] = std::move(results[i]);
    for (const ir::Value* v : node.inputs()) {
      size_t s = slot.at(v);
      if (last_use[s] == n) env[s] = Tensor();
    }
    // Outputs nobody reads are released at once.
    for (const ir::Value* v : node.outputs()) {
      if (!v->has_uses()) env[slot.at(v)] = Tensor();
    }
  }
  std::vector<Tensor> outputs;
  outputs.reserve(g.outputs().size());
  for (const ir::Value* v : g.outputs())
    outputs.push_back(env[slot.at(v)]);
  return outputs;
}

}  // namespace kiln
