// The random op family: dropout (training mode). Its mask follows Note [Random streams]: element
// i (row-major over the input's shape) is kept when its uniform float32 draw is >= p.
#include <array>

#include "kiln/base/error.h"
#include "kiln/base/philox.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/random_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

std::vector<OutputGeometry> dropout_shape(const OpDef& op, std::span<const MetaRef> in,
                                          const void* attrs) {
  double p = attrs_as<DropoutAttrs>(attrs).p;
  KILN_CHECK(p >= 0 && p <= 1, "{}: probability has to be between 0 and 1, but got {}", op.name, p);
  KILN_CHECK(is_floating(in[0].dtype),
             "{}: expected a floating point input, but got dtype {} (shape {})", op.name,
             in[0].dtype, shape_str(in[0].sizes));
  return rules::same_shape(op, in, attrs);
}

void dropout_kernel(const OpDef& op, std::span<const Tensor> outputs,
                    std::span<const Tensor> inputs, const void* attrs) {
  const auto& a = attrs_as<DropoutAttrs>(attrs);
  Tensor x = inputs[0].contiguous();
  const Tensor& out = outputs[0];
  auto seed = static_cast<uint64_t>(a.seed), offset = static_cast<uint64_t>(a.offset);
  KILN_DISPATCH_FLOATING(out.dtype(), op.name, [&]<class T>() {
    using C = compute_t<T>;
    const T* in = x.data_ptr<T>();
    T* o = out.data_ptr<T>();
    C scale = a.p < 1 ? static_cast<C>(1.0 / (1.0 - a.p)) : C(0);
    parallel_for(0, out.numel(), 16384, [&](int64_t b, int64_t e) {
      // dropout_keeps, with each Philox block computed once for its four elements.
      std::array<uint32_t, 4> words{};
      uint64_t current = UINT64_MAX;
      for (int64_t i = b; i < e; ++i) {
        auto u = static_cast<uint64_t>(i);
        if (offset + u / 4 != current) {
          current = offset + u / 4;
          words = Philox4x32::block(seed, current, 0);
        }
        if (static_cast<double>(uniform_float(words[u % 4])) >= a.p) {
          o[i] = static_cast<T>(static_cast<C>(in[i]) * scale);
        } else {
          o[i] = static_cast<T>(C(0));
        }
      }
    });
  });
}

}  // namespace

void register_random_ops(OpTable& table) {
  OpDef& dropout = table.add<DropoutAttrs>("dropout", {"self"}, kRandom, "DropoutAttrs");
  dropout.shape = dropout_shape;
  dropout.dtype = rules::same_dtype;
  dropout.compute[static_cast<int>(DispatchKey::CPU)] = dropout_kernel;
}

}  // namespace kiln
