// The body of the IR parser fuzzer, shared by the libFuzzer entry point (parser_fuzz.cpp) and
// the corpus replay test (tests/ir/fuzz_corpus_test.cpp) so that both check the same property:
// any bytes either parse or throw kiln::Error, and whatever parses prints to text that
// round-trips: print(parse(print(g))) == print(g). Then, as `kiln run` does, a graph that
// verifies runs through the interpreter on generated inputs, which must succeed or throw
// kiln::Error; graphs whose values hold more than kRunCap elements in all are not run.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/base/error.h"
#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/parser.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/verifier.h"
#include "kiln/runtime/api/factories.h"

namespace kiln_fuzz {

struct ParseOutcome {
  bool parsed = false;
  bool ran = false;     // verified, under the size cap, and interpreted without an error
  std::string failure;  // empty unless the round-trip property is broken
};

// The most elements all values of a graph may hold for it to be run (kiln run has no cap; the
// fuzzer keeps each input fast and its memory small).
inline constexpr int64_t kRunCap = int64_t{1} << 16;

// Interprets `g` on generated inputs as `kiln run` does: true when it ran, false when it threw
// kiln::Error or was too large to run.
inline bool run_graph(const kiln::ir::Graph& g) {
  try {
    kiln::ir::verify(g);
    int64_t total = 0;
    auto add = [&](const kiln::ir::Value* v) {
      total += kiln::shape_numel(v->type().sizes);  // throws past int64
    };
    for (const kiln::ir::Value* v : g.inputs())
      add(v);
    for (const kiln::ir::Node* n : g.nodes())
      for (const kiln::ir::Value* v : n->outputs()) {
        add(v);
        if (total > kRunCap) return false;
      }
    if (total > kRunCap) return false;
    kiln::manual_seed(0);
    std::vector<kiln::Tensor> inputs;
    for (const kiln::ir::Value* v : g.inputs()) {
      const kiln::ir::TensorType& t = v->type();
      if (!t.device.is_cpu()) return false;  // kiln run makes CPU inputs only
      auto options = kiln::TensorOptions().dtype(t.dtype);
      inputs.push_back(kiln::is_floating(t.dtype) ? kiln::randn(t.sizes, options)
                                                  : kiln::zeros(t.sizes, options));
    }
    (void)kiln::interpret(g, inputs);
    return true;
  } catch (const kiln::Error&) {
    return false;
  }
}

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
  if (r.failure.empty()) r.ran = run_graph(*g);
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
