// Writes codegen/cuda's preamble (cuda_preamble()) to the file named by argv[1], and the eager
// kernels' indexer prelude (eager_indexer_prelude()) to argv[2], for the tests in this folder to
// compile as host code.
#include <fstream>
#include <iostream>
#include <string>

#include "kiln/codegen/cuda/cuda_math.h"
#include "kiln/codegen/cuda/eager_pointwise.h"

namespace {

bool write(const char* path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return out.good();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: write_preamble PREAMBLE.inc INDEXER.inc\n";
    return 2;
  }
  bool ok = write(argv[1], kiln::codegen::cuda::cuda_preamble()) &&
            write(argv[2], kiln::codegen::cuda::eager_indexer_prelude());
  return ok ? 0 : 1;
}
