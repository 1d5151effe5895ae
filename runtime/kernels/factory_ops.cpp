// Factory ops: empty, full, arange, rand, randn.
#include <cmath>

#include "kiln/base/error.h"
#include "kiln/base/philox.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/factory_attrs.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/kernels/tensor_iterator.h"
#include "kiln/runtime/op_table.h"
#include "kiln/runtime/type_promotion.h"

namespace kiln {

int64_t arange_length(const ArangeAttrs& a) {
  double start = a.start.to_double(), end = a.end.to_double(), step = a.step.to_double();
  KILN_CHECK(step != 0, "arange: step must be nonzero");
  KILN_CHECK(std::isfinite(start) && std::isfinite(end), "arange: unsupported range {} -> {}",
             start, end);
  KILN_CHECK((step > 0 && end >= start) || (step < 0 && end <= start),
             "arange: upper bound and lower bound inconsistent with step sign "
             "(start={}, end={}, step={})",
             start, end, step);
  return static_cast<int64_t>(std::ceil((end - start) / step));
}

namespace {

template <class A>
Device device_of(const void* attrs) {
  return attrs_as<A>(attrs).device;
}
template <class A>
DType dtype_of_attrs(const OpDef&, std::span<const MetaRef>, const void* attrs, size_t) {
  return attrs_as<A>(attrs).dtype;
}
template <class A>
std::vector<OutputGeometry> size_shape(const OpDef&, std::span<const MetaRef>, const void* attrs) {
  return {OutputGeometry{attrs_as<A>(attrs).size}};
}

// empty and full: the sizes of the attributes (a template over the size type, Note [Symbolic
// sizes]). empty's value is 0, which fits every dtype.
template <class Ref>
std::vector<rules::GeometryOf<Ref>> full_shape(const OpDef& op, std::span<const Ref>,
                                               const void* attrs) {
  const auto& a = attrs_as<FullAttrs>(attrs);
  check_scalar_fits(op.name, a.value, a.dtype);
  if constexpr (std::is_same_v<Ref, MetaRef>) {
    return {OutputGeometry{expect_ints(a.size, op.name)}};
  } else {
    return {SymOutputGeometry{a.size}};
  }
}

void full_kernel(const OpDef&, std::span<const Tensor> outputs, std::span<const Tensor>,
                 const void* attrs) {
  fill_into(outputs[0], attrs_as<FullAttrs>(attrs).value);
}

void empty_kernel(const OpDef&, std::span<const Tensor>, std::span<const Tensor>, const void*) {}

std::vector<OutputGeometry> arange_shape(const OpDef&, std::span<const MetaRef>,
                                         const void* attrs) {
  return {OutputGeometry{Shape{arange_length(attrs_as<ArangeAttrs>(attrs))}}};
}

void arange_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor>,
                   const void* attrs) {
  const auto& a = attrs_as<ArangeAttrs>(attrs);
  const Tensor& out = outputs[0];
  KILN_DISPATCH_NUMERIC(out.dtype(), op.name, [&]<class T>() {
    T* p = out.data_ptr<T>();
    double start = a.start.to_double(), step = a.step.to_double();
    for (int64_t i = 0; i < out.numel(); ++i) {
      // One rounding, written out: the CUDA kernel computes the same fma, whatever either
      // compiler would contract.
      p[i] =
          static_cast<T>(static_cast<compute_t<T>>(std::fma(static_cast<double>(i), step, start)));
    }
  });
}

template <bool kNormal>
void random_kernel(const OpDef& op, std::span<const Tensor> outputs, std::span<const Tensor>,
                   const void* attrs) {
  const auto& a = attrs_as<RandomAttrs>(attrs);
  const Tensor& out = outputs[0];
  auto seed = static_cast<uint64_t>(a.seed), offset = static_cast<uint64_t>(a.offset);
  KILN_DISPATCH_FLOATING(out.dtype(), op.name, [&]<class T>() {
    T* p = out.data_ptr<T>();
    parallel_for(0, out.numel(), 16384, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        auto u = static_cast<uint64_t>(i);
        if constexpr (kNormal) {
          auto w = Philox4x32::block(seed, offset + u / 2, 0);
          size_t k = 2 * (u % 2);
          p[i] = static_cast<T>(static_cast<compute_t<T>>(box_muller(w[k], w[k + 1])));
        } else if constexpr (std::is_same_v<T, double>) {
          auto w = Philox4x32::block(seed, offset + u / 2, 0);
          size_t k = 2 * (u % 2);
          p[i] = uniform_double(w[k], w[k + 1]);
        } else {
          auto w = Philox4x32::block(seed, offset + u / 4, 0);
          constexpr int digits = std::is_same_v<T, Half>       ? 11
                                 : std::is_same_v<T, BFloat16> ? 8
                                                               : 24;
          p[i] = static_cast<T>(uniform_float(w[u % 4], digits));
        }
      }
    });
  });
}

}  // namespace

void register_factory_ops(OpTable& table) {
  constexpr int cpu = static_cast<int>(DispatchKey::CPU);
  OpDef& empty = table.add<FullAttrs>("empty", {}, kFactory | kNonDifferentiable, "FullAttrs");
  rules::set_shape_rules(empty, full_shape<MetaRef>, full_shape<SymMetaRef>);
  empty.dtype = dtype_of_attrs<FullAttrs>;
  empty.attr_device = device_of<FullAttrs>;
  empty.compute[cpu] = empty_kernel;
  // Allocation is the whole op, and the dispatcher allocates on the attrs' device.
  empty.compute[static_cast<int>(DispatchKey::CUDA)] = empty_kernel;

  OpDef& full =
      table.add<FullAttrs>("full", {}, kFactory | kNonDifferentiable | kRecomputable, "FullAttrs");
  rules::set_shape_rules(full, full_shape<MetaRef>, full_shape<SymMetaRef>);
  full.dtype = dtype_of_attrs<FullAttrs>;
  full.attr_device = device_of<FullAttrs>;
  full.compute[cpu] = full_kernel;

  OpDef& arange =
      table.add<ArangeAttrs>("arange", {}, kFactory | kNonDifferentiable, "ArangeAttrs");
  arange.shape = arange_shape;
  arange.dtype = dtype_of_attrs<ArangeAttrs>;
  arange.attr_device = device_of<ArangeAttrs>;
  arange.compute[cpu] = arange_kernel;

  for (bool normal : {false, true}) {
    OpDef& r = table.add<RandomAttrs>(normal ? "randn" : "rand", {},
                                      kFactory | kRandom | kNonDifferentiable, "RandomAttrs");
    r.shape = size_shape<RandomAttrs>;
    r.dtype = dtype_of_attrs<RandomAttrs>;
    r.attr_device = device_of<RandomAttrs>;
    r.compute[cpu] = normal ? random_kernel<true> : random_kernel<false>;
  }
}

}  // namespace kiln
