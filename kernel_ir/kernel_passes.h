// Named passes over one kernel, for `kiln opt` on kernel-IR text (kernel_parser.h) and its
// golden tests (tests/passes/*.kir), as the graph IR's passes are named in passes/.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "kiln/kernel_ir/kernel_ir.h"

namespace kiln::kir {

struct KernelPass {
  std::string_view name;
  std::string_view summary;
  // Returns whether the kernel changed. Throws kiln::Error on a kernel it cannot accept.
  bool (*run)(Kernel& kernel);
};

std::span<const KernelPass> kernel_passes();
// Null when there is no pass of that name.
const KernelPass* find_kernel_pass(std::string_view name);

// Removes what no store depends on: a `let` whose variable is never read, an accumulator that
// is never read (with its accumulates), and loops and ifs left with nothing in them; until
// nothing more goes. Loads have no effects, so dropping one never changes a result.
bool eliminate_dead_statements(Kernel& kernel);

// `kernel` with its size parameters fixed (Note [Size parameters]): `sizes` in launch order
// (Kernel::sizes()), each at least 0, and `buffer_extents` the extents of the buffers declared
// with kRuntimeExtent, in buffer order (others keep theirs). Loops that run to a size of 0 are
// dropped. The result has static sizes, so the verifier bounds every index of it.
Kernel specialize_sizes(const Kernel& kernel, std::span<const int64_t> sizes,
                        std::span<const int64_t> buffer_extents);
// The same, each buffer of kRuntimeExtent given the extent its indices reach at these sizes
// (`kiln opt --sizes`); throws kiln::Error when an index cannot be bounded.
Kernel specialize_sizes(const Kernel& kernel, std::span<const int64_t> sizes);

}  // namespace kiln::kir
