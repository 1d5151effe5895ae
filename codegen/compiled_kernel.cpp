#include "kiln/codegen/compiled_kernel.h"

#include "kiln/base/error.h"

namespace kiln::codegen {

void CompiledKernel::launch_sized(std::span<void* const> buffers,
                                  std::span<const int64_t> sizes) const {
  if (sizes.empty()) return launch(buffers);
  KILN_ERROR("{} backend: this backend cannot launch kernels with size parameters yet ({} given)",
             backend(), sizes.size());
}

}  // namespace kiln::codegen
