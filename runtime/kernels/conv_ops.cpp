// The op-table entries convolution and convolution_backward (torch's aten::convolution and
// aten::convolution_backward), with their CPU kernels (conv_cpu.cpp). The CUDA kernels are
// cuDNN's (runtime/cuda/cudnn_conv.cpp), the derivatives in
// runtime/autograd/derivatives/conv_derivatives.cpp.
#include "kiln/base/error.h"
#include "kiln/runtime/kernels/conv_cpu.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

ConvGeometry conv_geometry_of(const OpDef& op, std::span<const Tensor> inputs, const ConvAttrs& a) {
  ShapeRef bias;
  if (inputs.size() == 3) bias = inputs[2].sizes();
  return conv_geometry(op, inputs[0].sizes(), inputs[1].sizes(),
                       inputs.size() == 3 ? &bias : nullptr, a);
}

ConvBackwardOutputs conv_backward_outputs(const ConvBackwardAttrs& a,
                                          std::span<const Tensor> outputs) {
  ConvBackwardOutputs r;
  size_t next = 0;
  if (a.output_mask[0] != 0) r.grad_input = outputs[next++];
  if (a.output_mask[1] != 0) r.grad_weight = outputs[next++];
  if (a.output_mask[2] != 0) r.grad_bias = outputs[next++];
  return r;
}

namespace {

void convolution_cpu(const OpDef& op, std::span<const Tensor> outputs,
                     std::span<const Tensor> inputs, const void* attrs) {
  ConvGeometry g = conv_geometry_of(op, inputs, attrs_as<ConvAttrs>(attrs));
  conv_forward_cpu(g, inputs[0], inputs[1], inputs.size() == 3 ? inputs[2] : Tensor(), outputs[0]);
}

void convolution_backward_cpu(const OpDef& op, std::span<const Tensor> outputs,
                              std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<ConvBackwardAttrs>(attrs);
  ConvGeometry g = conv_geometry_of(op, inputs.subspan(1), a.conv);
  ConvBackwardOutputs o = conv_backward_outputs(a, outputs);
  conv_backward_cpu(g, inputs[0], inputs[1], inputs[2], o.grad_input, o.grad_weight, o.grad_bias);
}

// grad_output, input and weight share one floating dtype.
DType convolution_backward_dtype(const OpDef& op, std::span<const MetaRef> in, const void*,
                                 size_t) {
  KILN_CHECK(in[0].dtype == in[1].dtype && in[1].dtype == in[2].dtype,
             "{}: expected grad_output, input and weight of one dtype, got {}, {} and {}", op.name,
             in[0].dtype, in[1].dtype, in[2].dtype);
  KILN_CHECK(is_floating(in[0].dtype), "{}: dtype {} is not supported (expected floating point)",
             op.name, in[0].dtype);
  return in[0].dtype;
}

}  // namespace

void register_conv_ops(OpTable& table) {
  constexpr int cpu = static_cast<int>(DispatchKey::CPU);
  OpDef& conv = table.add<ConvAttrs>("convolution", {"input", "weight", "bias"}, 0, "ConvAttrs");
  conv.variadic = true;  // (input, weight, [bias])
  conv.shape = convolution_shape;
  conv.sym_shape = convolution_sym_shape;
  conv.dtype = convolution_dtype;
  conv.compute[cpu] = convolution_cpu;

  OpDef& back = table.add<ConvBackwardAttrs>(
      "convolution_backward", {"grad_output", "input", "weight"}, kInternal, "ConvBackwardAttrs");
  back.max_outputs = 3;  // the masked-in of grad_input, grad_weight, grad_bias
  back.shape = convolution_backward_shape;
  back.sym_shape = convolution_backward_sym_shape;
  back.dtype = convolution_backward_dtype;
  back.compute[cpu] = convolution_backward_cpu;
}

}  // namespace kiln
