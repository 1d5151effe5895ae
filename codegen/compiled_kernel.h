// A kernel compiled to machine code by a backend (DESIGN.md principle 6: compile is separate
// from launch). The plan executor launches it knowing nothing of how it was made; every backend
// derives from this one interface.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace kiln::codegen {

class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  virtual std::string_view backend() const = 0;  // "llvm", "cuda"
  // Runs the kernel once. buffers[i] is the address of element 0 of the kernel's buffer i (the
  // tensor's data pointer), in the kernel's argument order; the caller has checked dtypes,
  // extents, and that no output overlaps another argument (the code assumes noalias).
  virtual void launch(std::span<void* const> buffers) const = 0;
  // A kernel with size parameters (Note [Size parameters]) takes their values after the
  // buffers, in the kernel's order of size parameters. The default throws kiln::Error: the
  // backend cannot launch such kernels yet.
  virtual void launch_sized(std::span<void* const> buffers, std::span<const int64_t> sizes) const;
};

}  // namespace kiln::codegen
