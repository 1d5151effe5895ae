#include <mutex>

#include "kiln/base/philox.h"

namespace kiln {
namespace {

struct Generator {
  std::mutex mutex;
  GeneratorState state{67280421310721ull, 0};  // a fixed default seed: runs are reproducible
};

Generator& generator() {
  static Generator g;
  return g;
}

}  // namespace

void manual_seed(uint64_t seed) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.state = {seed, 0};
}

GeneratorState reserve_random_blocks(uint64_t blocks) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  GeneratorState s = g.state;
  g.state.offset += blocks;
  return s;
}

GeneratorState get_rng_state() {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.state;
}

void set_rng_state(GeneratorState state) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.state = state;
}

}  // namespace kiln
