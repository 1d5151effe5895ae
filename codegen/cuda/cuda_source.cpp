// CudaSource and CudaEntry (cuda_emitter.h): what an emitted kernel is and how its entries
// launch, apart from how the emitter writes them.
#include <fmt/format.h>

#include "kiln/base/error.h"
#include "kiln/codegen/cuda/cuda_emitter.h"
#include "kiln/codegen/cuda/cuda_math.h"

namespace kiln::codegen::cuda {

std::string_view mapping_name(Mapping m) {
  switch (m) {
    case Mapping::Elementwise:
      return "elementwise";
    case Mapping::BlockPerRow:
      return "block-per-row";
    case Mapping::ThreadPerRow:
      return "thread-per-row";
    case Mapping::SingleThread:
      return "single-thread";
  }
  return "?";
}

int64_t CudaEntry::work_at(std::span<const int64_t> sizes) const {
  if (work_sizes.empty()) return work;
  int64_t w = work_factor;
  for (int i : work_sizes) {
    KILN_CHECK(i >= 0 && static_cast<size_t>(i) < sizes.size(),
               "cuda backend: entry {} reads size parameter {} of {}", symbol, i, sizes.size());
    w *= sizes[static_cast<size_t>(i)];
  }
  return w;
}

std::string CudaSource::str() const {
  std::string s = fmt::format("// kernel {}: {} entr{}\n", name, entries.size(),
                              entries.size() == 1 ? "y" : "ies");
  for (const CudaEntry& e : entries) {
    std::string work = fmt::format("{}", e.work);
    if (!e.work_sizes.empty()) {
      work.clear();
      for (int i : e.work_sizes)
        work += fmt::format("{}size{}", work.empty() ? "" : "*", i);
      if (e.work_factor != 1) work += fmt::format("*{}", e.work_factor);
    }
    s += fmt::format("//   {}: {}, work {}, block {}, grid {}\n", e.symbol, mapping_name(e.mapping),
                     work, e.block, e.grid);
  }
  return s + code;
}

std::string CudaSource::translation_unit() const {
  return cuda_preamble() + code;
}

}  // namespace kiln::codegen::cuda
