// The body of the IR parser fuzzer, shared by the libFuzzer entry point (parser_fuzz.cpp) and
// the corpus replay test (tests/ir/fuzz_corpus_test.cpp) so that both check the same property:
// any bytes either parse or throw kiln::Error, and whatever parses prints to text that
// round-trips: print(parse(print(g))) == print(g).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/ir/parser.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/error.h"

namespace kiln_fuzz {

struct ParseOutcome {
  bool parsed = false;
  std::string failure;  // empty unless the round-trip property is broken
};

inline ParseOutcome check_one(const uint8_t* data, size_t size) {
  ParseOutcome r;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<kiln::ir::Graph> g;
  try {
    g = kiln::ir::parse(text);
  } catch (const kiln::Error&) {
    return r;
  }
  r.parsed = true;
  std::string once = kiln::ir::print(*g);
  try {
    std::string twice = kiln::ir::print(*kiln::ir::parse(once));
    if (twice != once)
      r.failure = "printing the reparsed graph differs:\n" + once + "---\n" + twice;
  } catch (const kiln::Error& e) {
    r.failure = std::string("the printed graph does not parse: ") + e.what() + "\n" + once;
  }
  return r;
}

// 1 when the input parsed, 0 when it was rejected; aborts when the round trip breaks.
inline int parse_one(const uint8_t* data, size_t size) {
  ParseOutcome r = check_one(data, size);
  if (!r.failure.empty()) {
    std::fprintf(stderr, "%s\n", r.failure.c_str());
    std::abort();
  }
  return r.parsed ? 1 : 0;
}

}  // namespace kiln_fuzz
