// kiln_differential_fuzz FIRST COUNT: runs COUNT seeded programs from FIRST (program.h) and
// prints each disagreement with its program; a progress line every 100 programs. Exit status 1
// when any disagreed. scripts/fuzz_differential.sh is the front end.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "differential/program.h"

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) == "--help") {
    std::printf("usage: %s FIRST COUNT\nruns COUNT differential programs from seed FIRST\n",
                argv[0]);
    return argc == 2 ? 0 : 2;
  }
  uint64_t first = std::strtoull(argv[1], nullptr, 10), count = std::strtoull(argv[2], nullptr, 10);
  auto start = std::chrono::steady_clock::now();
  uint64_t failures = 0;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t seed = first + i;
    kiln_test::differential::Program p = kiln_test::differential::generate(seed);
    kiln_test::differential::Verdict v = kiln_test::differential::check(p);
    if (!v.agree) {
      ++failures;
      std::printf("DISAGREE seed %llu: %s\n%s\n", static_cast<unsigned long long>(seed),
                  v.detail.c_str(), p.str().c_str());
    }
    if ((i + 1) % 100 == 0 || i + 1 == count) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "differential: %llu/%llu programs, %llu disagreements, %.0f s\n",
                   static_cast<unsigned long long>(i + 1), static_cast<unsigned long long>(count),
                   static_cast<unsigned long long>(failures), s);
    }
    std::fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}
