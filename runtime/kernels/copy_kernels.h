// Data movement for use inside kernels. These write a kernel's own freshly allocated outputs or
// temporaries directly, without dispatching copy_/fill_: a kernel's internal writes are not
// in-place ops of the user's, so they must not bump version counters or reach wrapper keys.
#pragma once

#include "kiln/runtime/tensor.h"

namespace kiln {

// dst[...] = src[...] converted to dst's dtype, with src broadcast to dst's shape.
void copy_into(const Tensor& dst, const Tensor& src);
// Every element of dst = value (converted to dst's dtype).
void fill_into(const Tensor& dst, const Scalar& value);

}  // namespace kiln
