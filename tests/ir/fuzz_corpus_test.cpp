// Replays the parser fuzzer's seed corpus (tests/fuzz/corpus/: graph IR and kernel IR) and a
// few thousand deterministic mutations of it through the fuzzer's own body, so that every
// build checks what scripts/fuzz_parser.sh checks: no crash, only kiln::Error, and
// print(parse(print(g))) == print(g) for whatever parses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/parser_fuzz_lib.h"

namespace {

struct Seed {
  std::string name;
  std::string bytes;
};

std::vector<Seed> load_corpus() {
  std::vector<Seed> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(KILN_FUZZ_CORPUS_DIR)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    seeds.push_back({entry.path().filename().string(), ss.str()});
  }
  std::sort(seeds.begin(), seeds.end(),
            [](const Seed& a, const Seed& b) { return a.name < b.name; });
  return seeds;
}

kiln_fuzz::ParseOutcome run(const std::string& bytes) {
  return kiln_fuzz::check_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

TEST(IrFuzzCorpus, SeedsParseOrFailCleanly) {
  std::vector<Seed> seeds = load_corpus();
  ASSERT_GE(seeds.size(), 15u);
  size_t parsed = 0;
  for (const Seed& s : seeds) {
    kiln_fuzz::ParseOutcome r = run(s.bytes);
    EXPECT_EQ(r.failure, "") << s.name;
    // The seeds named *_bad_* are malformed on purpose; the others are valid.
    bool bad = s.name.find("_bad_") != std::string::npos;
    EXPECT_EQ(r.parsed, !bad) << s.name;
    parsed += r.parsed ? 1 : 0;
  }
  EXPECT_GE(parsed, 8u);
}

// Fragments of the grammar, so that insertions make near-valid texts and reach deep into the
// parser rather than failing at the first byte.
const std::vector<std::string> kDictionary = {
    "%0",
    "%x",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ", ",
    " : ",
    " = ",
    "graph(",
    "return (",
    "\n  ",
    "#",
    "\"",
    "\\",
    "-",
    "1e",
    "nan",
    "-inf",
    "f32[2]",
    "b8",
    "strided[1]",
    "meta",
    "cuda:",
    "none",
    "true",
    "9999999999999999999999",
    "prim.constant",
    "prim.fusion_group",
    "prim.fallback",
    "value=[",
    "name=",
    "requires_grad",
    "0.5",
    // kernel IR
    "kernel k(",
    "%n: size",
    "f32[?]",
    " out",
    "parallel for %i in 0..",
    "vector for %j in 0..%n {",
    "acc %s: f32 = sum",
    "store %out[",
    "load %x[",
    "min(max(",
    "select(",
};

// Replacements that keep a text well-formed more often than not: other numbers and other
// words of the same position (dtypes, devices, literals).
const std::vector<std::string> kNumbers = {"0",
                                           "-1",
                                           "7",
                                           "1.5",
                                           "-0.0",
                                           "1e300",
                                           "nan",
                                           "-inf",
                                           "65504.0",
                                           "1e-45",
                                           "9223372036854775807"};
const std::vector<std::string> kWords = {"b8",   "i32", "i64",  "f16",  "bf16",  "f32",
                                         "f64",  "cpu", "meta", "true", "false", "none",
                                         "relu", "neg", "exp",  "add",  "mul",   "sum"};

// Replaces the number or word at or after `pos` with `with`.
void replace_token(std::string& s, size_t pos, const std::string& with, bool digits) {
  auto in_token = [&](char c) {
    return digits ? (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-')
                  : (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  };
  while (pos < s.size() && !in_token(s[pos]))
    ++pos;
  if (pos >= s.size()) return;
  size_t b = pos, e = pos;
  while (b > 0 && in_token(s[b - 1]))
    --b;
  while (e < s.size() && in_token(s[e]))
    ++e;
  s.replace(b, e - b, with);
}

std::string mutate(const std::vector<Seed>& seeds, std::mt19937& rng) {
  auto below = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  // Mostly the valid seeds: mutants of valid texts reach past the first error.
  std::vector<const Seed*> valid;
  for (const Seed& seed : seeds)
    if (seed.name.find("_bad_") == std::string::npos) valid.push_back(&seed);
  std::string s = below(4) != 0 && !valid.empty() ? valid[below(valid.size())]->bytes
                                                  : seeds[below(seeds.size())].bytes;
  int edits = below(2) == 0 ? 1 : 1 + static_cast<int>(below(3));
  for (int e = 0; e < edits; ++e) {
    size_t pos = below(s.size() + 1);
    switch (below(10)) {
      case 7:
      case 8:
        replace_token(s, pos, kNumbers[below(kNumbers.size())], true);
        break;
      case 9:
        replace_token(s, pos, kWords[below(kWords.size())], false);
        break;
      case 0:  // flip a byte
        if (!s.empty()) s[below(s.size())] = static_cast<char>(rng() & 0xff);
        break;
      case 1:  // truncate
        s.resize(pos);
        break;
      case 2:  // delete a range
        s.erase(pos, below(16));
        break;
      case 3:  // insert a grammar fragment
        s.insert(pos, kDictionary[below(kDictionary.size())]);
        break;
      case 4: {  // splice: this text up to pos, then another seed from some point on
        const std::string& other = seeds[below(seeds.size())].bytes;
        s = s.substr(0, pos) + other.substr(below(other.size() + 1));
        break;
      }
      case 5: {  // duplicate a range
        std::string piece = s.substr(pos, below(40));
        s.insert(below(s.size() + 1), piece);
        break;
      }
      default:  // swap two bytes
        if (s.size() > 1) std::swap(s[below(s.size())], s[below(s.size())]);
        break;
    }
  }
  return s;
}

TEST(IrFuzzCorpus, DeterministicMutations) {
  std::vector<Seed> seeds = load_corpus();
  ASSERT_FALSE(seeds.empty());
  // Fixed: the same mutants in every run. KILN_FUZZ_SEED and KILN_FUZZ_MUTANTS give a longer
  // campaign by hand (the fuzzer's property without libFuzzer, which needs Clang 15).
  const char* seed_env = std::getenv("KILN_FUZZ_SEED");
  const char* count_env = std::getenv("KILN_FUZZ_MUTANTS");
  std::mt19937 rng(seed_env != nullptr ? static_cast<uint32_t>(std::stoul(seed_env)) : 0x6b696c6e);
  const int kMutants = count_env != nullptr ? std::stoi(count_env) : 10000;
  int parsed = 0, ran = 0, kernels_ran = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kMutants; ++i) {
    std::string text = mutate(seeds, rng);
    kiln_fuzz::ParseOutcome r;
    try {
      r = run(text);
    } catch (const std::exception& e) {  // check_one turns kiln::Error into "rejected"
      FAIL() << e.what() << ", mutant " << i << ":\n" << text;
    }
    ASSERT_EQ(r.failure, "") << "mutant " << i << ":\n" << text;
    parsed += r.parsed ? 1 : 0;
    ran += r.ran ? 1 : 0;
    kernels_ran += r.ran && kiln::kir::looks_like_kernel_ir(text) ? 1 : 0;
  }
  // Kernel-IR mutants among them, run by the kernel interpreter.
  EXPECT_GT(kernels_ran, kMutants / 200) << "kernel-IR mutants ran " << kernels_ran;
  RecordProperty("kernel_ir_mutants_ran", kernels_ran);
  // And some must run, or the interpreter half of the property checks nothing.
  EXPECT_GT(ran, kMutants / 100) << "ran " << ran;
  RecordProperty("ran_mutants", ran);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Some mutants must survive, or the mutations only exercise the first error paths.
  EXPECT_GT(parsed, kMutants / 20) << "parsed " << parsed;
  RecordProperty("parsed_mutants", parsed);
  RecordProperty("seconds", std::to_string(seconds));
}

}  // namespace
