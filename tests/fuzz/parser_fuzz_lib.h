// The body of the IR parser fuzzer, shared by the libFuzzer entry point (parser_fuzz.cpp) and
// the corpus replay test (tests/ir/fuzz_corpus_test.cpp) so that both check the same property:
// any bytes either parse or throw kiln::Error, and whatever parses prints to text that
// round-trips: print(parse(print(g))) == print(g). Then, as `kiln run` does, a graph that
// verifies runs through the interpreter on generated inputs, which must succeed or throw
// kiln::Error; graphs whose values hold more than kRunCap elements in all are not run.
// Kernel-IR text (it starts with `kernel`) goes to the kernel-IR parser instead, with the same
// round trip; each kernel then runs in the kernel interpreter on zeroed buffers, its size
// parameters all kKernelSize, which must succeed or throw kiln::Error: a kernel the verifier
// accepts never reads or writes outside its buffers (AddressSanitizer watches in the fuzz
// build).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/error.h"
#include "kiln/frontend/compile/interpreter.h"
#include "kiln/ir/parser.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/verifier.h"
#include "kiln/kernel_ir/kernel_interpreter.h"
#include "kiln/kernel_ir/kernel_parser.h"
#include "kiln/kernel_ir/kernel_passes.h"
#include "kiln/kernel_ir/kernel_printer.h"
#include "kiln/kernel_ir/kernel_verifier.h"
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

// The value of every size parameter when a fuzzed kernel runs.
inline constexpr int64_t kKernelSize = 3;

// The iterations of the statements in `body` when each loop runs its extent (a size parameter
// kKernelSize times), saturating at kRunCap + 1.
inline int64_t kernel_iterations(const std::vector<kiln::kir::Stmt>& body) {
  int64_t total = 0;
  for (const kiln::kir::Stmt& s : body) {
    int64_t inner = 1 + kernel_iterations(s.body) + kernel_iterations(s.else_body);
    int64_t trips = s.kind != kiln::kir::StmtKind::Loop ? 1
                    : s.extent_size >= 0                ? kKernelSize
                                                        : std::max<int64_t>(s.extent, 0);
    if (trips > 0 && inner > (kRunCap + 1) / trips) return kRunCap + 1;
    total = std::min(kRunCap + 1, total + trips * inner);
  }
  return total;
}

// Runs `k` in the kernel interpreter as the fuzz property says: true when it ran, false when it
// was rejected (kiln::Error) or too large to run.
inline bool run_kernel_ir(const kiln::kir::Kernel& k) {
  try {
    kiln::kir::verify(k);
    std::vector<int64_t> sizes(k.sizes().size(), kKernelSize);
    // The buffers' extents at these sizes, as `kiln opt --sizes` derives them.
    kiln::kir::Kernel fixed = sizes.empty() ? k : kiln::kir::specialize_sizes(k, sizes);
    if (kernel_iterations(fixed.body) > kRunCap) return false;
    int64_t elements = 0;
    for (const kiln::kir::Buffer& b : fixed.buffers) {
      if (b.extent > kRunCap - elements) return false;  // no overflow: both are at most kRunCap
      elements += b.extent;
    }
    std::vector<std::vector<char>> storage;
    std::vector<kiln::kir::BoundBuffer> bound;
    for (const kiln::kir::Buffer& b : fixed.buffers) {
      storage.emplace_back(static_cast<size_t>(b.extent) * kiln::element_size(b.dtype) + 1, 0);
      bound.push_back({storage.back().data(), b.dtype, b.extent});
    }
    kiln::kir::run_kernel(k, bound, sizes);
    return true;
  } catch (const kiln::Error&) {
    return false;
  }
}

inline ParseOutcome check_kernels(std::string_view text) {
  ParseOutcome r;
  std::vector<kiln::kir::Kernel> kernels;
  try {
    kernels = kiln::kir::parse_kernels(text);
  } catch (const kiln::Error&) {
    return r;
  }
  r.parsed = true;
  std::string once;
  for (const kiln::kir::Kernel& k : kernels)
    once += kiln::kir::print(k) + "\n";
  try {
    std::string twice;
    for (const kiln::kir::Kernel& k : kiln::kir::parse_kernels(once))
      twice += kiln::kir::print(k) + "\n";
    if (twice != once)
      r.failure = "printing the reparsed kernels differs:\n" + once + "---\n" + twice;
  } catch (const kiln::Error& e) {
    r.failure = std::string("the printed kernels do not parse: ") + e.what() + "\n" + once;
  }
  if (!r.failure.empty()) return r;
  r.ran = !kernels.empty();
  for (const kiln::kir::Kernel& k : kernels)
    r.ran = run_kernel_ir(k) && r.ran;
  return r;
}

inline ParseOutcome check_one(const uint8_t* data, size_t size) {
  ParseOutcome r;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (kiln::kir::looks_like_kernel_ir(text)) return check_kernels(text);
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
