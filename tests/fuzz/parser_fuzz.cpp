// libFuzzer entry point for the IR text parsers (graph IR and kernel IR): build with
// scripts/fuzz_parser.sh (Clang, -DKILN_FUZZ=ON). The property it checks is in parser_fuzz_lib.h.
#include <cstddef>
#include <cstdint>

#include "fuzz/parser_fuzz_lib.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln_fuzz::parse_one(data, size);
  return 0;
}
