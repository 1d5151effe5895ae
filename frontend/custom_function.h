// Custom autograd functions, as torch::autograd::Function<T> in libtorch:
//
//   struct MulConstant : kiln::autograd::Function<MulConstant> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x, double c) {
//       ctx->saved_data["c"] = c;
//       return x * c;
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list grads) {
//       return {grads[0] * std::any_cast<double>(ctx->saved_data["c"]), Tensor()};
//     }
//   };
//   Tensor y = MulConstant::apply(x, 2.0);
//
// forward runs with grad mode off and may take non-tensor arguments. backward returns one
// gradient per forward argument (undefined for non-tensor arguments) or one per tensor input.
// A Function is opaque to the compiler (a graph break) unless it declares
// `static constexpr bool is_traceable = true;`, which promises that backward only calls ops.
#pragma once

#include <any>
#include <memory>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "kiln/frontend/tensor_tree.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/autograd/node.h"
#include "kiln/runtime/autograd/saved_variable.h"
#include "kiln/runtime/tracing_state.h"

namespace kiln::autograd {

class CppNodeBase;

class AutogradContext {
 public:
  // Tensors backward needs; each is checked for in-place modification when read back.
  void save_for_backward(std::vector<Tensor> to_save);
  std::vector<Tensor> get_saved_variables() const;
  // Outputs that get no gradient (an argmax returned next to values).
  void mark_non_differentiable(const std::vector<Tensor>& outputs);
  // Inputs that forward modified in place and returns: each becomes the output of this
  // Function's Node (its history is rebased, as an in-place op's is), not a new alias.
  void mark_dirty(const std::vector<Tensor>& inputs);
  // With true (the default), gradients that did not flow reach backward as zeros.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // In backward: does the tensor input `i` (counting tensor arguments only) need a gradient?
  bool needs_input_grad(size_t i) const;

  // Non-tensor state for backward.
  std::unordered_map<std::string, std::any> saved_data;

 private:
  friend class CppNodeBase;
  friend void finish_custom_function(const std::shared_ptr<CppNodeBase>&, bool,
                                     const std::vector<Tensor>&, const std::vector<Tensor*>&);
  std::vector<Tensor> to_save_;
  std::vector<SavedVariable> saved_;
  std::vector<const TensorImpl*> non_differentiable_;
  std::vector<const TensorImpl*> dirty_;
  std::vector<bool> needs_input_grad_;
  bool materialize_grads_ = true;
  std::weak_ptr<Node> node_;
};

// The Node of one custom Function call.
class CppNodeBase : public Node {
 public:
  CppNodeBase(std::string name, bool traceable) : name_(std::move(name)), traceable_(traceable) {}
  std::string name() const override { return name_; }
  bool is_traceable() override { return traceable_; }
  void release_variables() override;

  AutogradContext ctx;
  std::vector<bool> is_variable_input;     // per forward argument
  std::vector<InputMetadata> output_meta;  // every output, for materialized zero gradients

 protected:
  variable_list apply(variable_list&& grads) override;
  virtual variable_list call_backward(variable_list grads) = 0;

 private:
  std::string name_;
  bool traceable_;
};

template <class T>
class CppNode : public CppNodeBase {
 public:
  using CppNodeBase::CppNodeBase;

 protected:
  variable_list call_backward(variable_list grads) override {
    return T::backward(&ctx, std::move(grads));
  }
};

std::string demangled_type_name(const std::type_info& type);
// Makes `t`, a result of an opaque forward (custom Function, checkpoint), output `output_nr` of
// `node`. An input returned as is, or any tensor that already has autograd state, keeps its own
// history: `t` is replaced by a new alias of the same data.
void set_result_history(Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr,
                        const std::vector<Tensor>& inputs);
// Connects the Node to its inputs (when recording) and gives the outputs their history.
bool prepare_custom_function(CppNodeBase& node, const std::vector<Tensor>& tensor_inputs);
void finish_custom_function(const std::shared_ptr<CppNodeBase>& node, bool record,
                            const std::vector<Tensor>& tensor_inputs,
                            const std::vector<Tensor*>& outputs);

template <class T>
struct Function {
  // T declares `static constexpr bool is_traceable = true` when its backward only calls
  // dispatcher ops; opaque otherwise. A function, not a constant: T is incomplete here.
  static constexpr bool traceable() {
    if constexpr (requires { T::is_traceable; }) {
      return static_cast<bool>(T::is_traceable);
    } else {
      return false;
    }
  }

  template <class... Args>
  static auto apply(Args&&... args) {
    if constexpr (!traceable() && (std::is_copy_constructible_v<std::decay_t<Args>> && ...)) {
      TracingState* state = current_tracing_state();
      if (state != nullptr && state->records_graph_breaks() && is_tracing()) {
        return apply_as_graph_break(*state, args...);
      }
    }
    return apply_eager(std::forward<Args>(args)...);
  }

 private:
  template <class... Args>
  static auto apply_eager(Args&&... args) {
    auto node = autograd::make_node<CppNode<T>>(demangled_type_name(typeid(T)), traceable());
    std::vector<Tensor> tensor_inputs;
    auto note = [&](const auto& arg) {
      size_t before = tensor_inputs.size();
      for_each_tensor(arg, [&](const Tensor& t) { tensor_inputs.push_back(t); });
      // A std::vector<Tensor> argument counts as one argument per element.
      size_t added = tensor_inputs.size() - before;
      if (added == 0) node->is_variable_input.push_back(false);
      for (size_t i = 0; i < added; ++i)
        node->is_variable_input.push_back(true);
    };
    (note(args), ...);
    bool record = prepare_custom_function(*node, tensor_inputs);
    auto out = [&] {
      AutoGradMode forward_without_grad(false);
      return T::forward(&node->ctx, args...);
    }();
    std::vector<Tensor*> outputs;
    for_each_tensor(out, [&](Tensor& t) { outputs.push_back(&t); });
    finish_custom_function(node, record, tensor_inputs, outputs);
    return out;
  }

  // One opaque step of the trace that calls apply() eagerly, now and on every later run of the
  // graph, with that run's tensors in place of the arguments' tensors (Note [Graph breaks]).
  template <class... Args>
  static auto apply_as_graph_break(TracingState& state, const Args&... args) {
    using Out = decltype(T::forward(std::declval<AutogradContext*>(), args...));
    struct Shared {
      std::tuple<std::decay_t<Args>...> args;
      bool capturing = true;
      std::optional<Out> first;  // the capture run's structured result
    };
    auto shared = std::make_shared<Shared>(Shared{std::tuple<std::decay_t<Args>...>(args...)});
    std::vector<Tensor> inputs;
    std::apply(
        [&](auto&... xs) { (for_each_tensor(xs, [&](Tensor& t) { inputs.push_back(t); }), ...); },
        shared->args);
    TracingState::OpaqueFn call = [shared](const std::vector<Tensor>& new_inputs) {
      auto a = shared->args;
      size_t k = 0;
      std::apply(
          [&](auto&... xs) {
            (for_each_tensor(xs, [&](Tensor& t) { t = new_inputs.at(k++); }), ...);
          },
          a);
      // Below the Tracer key (record_fallback runs this with it excluded): the eager path.
      Out out = std::apply([](auto&... xs) { return apply_eager(xs...); }, a);
      std::vector<Tensor> flat;
      for_each_tensor(out, [&](Tensor& t) { flat.push_back(t); });
      if (shared->capturing) shared->first = std::move(out);
      return flat;
    };
    state.record_fallback(demangled_type_name(typeid(T)), std::move(call), inputs);
    shared->capturing = false;
    Out out = std::move(*shared->first);
    shared->first.reset();
    return out;
  }
};

}  // namespace kiln::autograd
