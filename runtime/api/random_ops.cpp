#include "kiln/runtime/api/random_ops.h"

#include "kiln/base/call_site.h"
#include "kiln/base/philox.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/random_attrs.h"
#include "kiln/runtime/op_table.h"

namespace kiln {

Tensor dropout(const Tensor& x, double p, bool train, std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(p >= 0 && p <= 1, "dropout: probability has to be between 0 and 1, but got {}", p);
  if (!train || p == 0) return x;
  if (p == 1) return zeros_like(x);
  uint64_t per_block = random_elements_per_block(false, false);
  auto numel = static_cast<uint64_t>(x.numel());
  GeneratorState g = reserve_random_blocks((numel + per_block - 1) / per_block);
  return call_op1(KILN_OP("dropout"), {x},
                  DropoutAttrs{p, static_cast<int64_t>(g.seed), static_cast<int64_t>(g.offset)});
}

Tensor rand_like(const Tensor& x, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return rand(x.sizes(), like_options(x, options));
}
Tensor randn_like(const Tensor& x, TensorOptions options, std::source_location loc) {
  CallSiteScope site(loc);
  return randn(x.sizes(), like_options(x, options));
}

}  // namespace kiln
