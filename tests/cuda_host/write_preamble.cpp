// Writes codegen/cuda's preamble (cuda_preamble()) to the file named by argv[1], for
// cuda_preamble_host_test.cpp to compile as host code.
#include <fstream>
#include <iostream>

#include "kiln/codegen/cuda/cuda_math.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_preamble OUT.inc\n";
    return 2;
  }
  std::ofstream out(argv[1]);
  out << kiln::codegen::cuda::cuda_preamble();
  return out.good() ? 0 : 1;
}
