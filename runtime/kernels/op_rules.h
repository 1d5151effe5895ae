// Shape and dtype rules shared by several op families.
#pragma once

#include "kiln/runtime/op_def.h"

namespace kiln::rules {

// One output with the broadcast of all inputs' shapes.
std::vector<OutputGeometry> broadcast_shape(const OpDef& op, std::span<const MetaRef> inputs,
                                            const void* attrs);
// One output shaped like input 0.
std::vector<OutputGeometry> same_shape(const OpDef& op, std::span<const MetaRef> inputs,
                                       const void* attrs);
// The rule over symbolic sizes that instantiates the same template as `rule`, or null when
// `rule` has not been written over symbols yet. The op table sets OpDef::sym_shape from it.
SymShapeRule symbolic_twin(ShapeRule rule);
// Input 0's dtype.
DType same_dtype(const OpDef& op, std::span<const MetaRef> inputs, const void* attrs, size_t);

}  // namespace kiln::rules
