#include "kiln/runtime/kernels/op_rules.h"

namespace kiln::rules {

std::vector<OutputGeometry> broadcast_shape(const OpDef& op, std::span<const MetaRef> inputs,
                                            const void*) {
  Shape shape(inputs[0].sizes.begin(), inputs[0].sizes.end());
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].sizes.size() == shape.size() &&
        std::equal(shape.begin(), shape.end(), inputs[i].sizes.begin())) {
      continue;
    }
    shape = broadcast_shapes(op.name, shape, inputs[i].sizes);
  }
  return {OutputGeometry{std::move(shape)}};
}

std::vector<OutputGeometry> same_shape(const OpDef&, std::span<const MetaRef> inputs, const void*) {
  return {OutputGeometry{Shape(inputs[0].sizes.begin(), inputs[0].sizes.end())}};
}

DType same_dtype(const OpDef&, std::span<const MetaRef> inputs, const void*, size_t) {
  return inputs[0].dtype;
}

}  // namespace kiln::rules
