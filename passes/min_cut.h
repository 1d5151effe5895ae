// Minimum s-t cut of a small directed graph with integer capacities (Edmonds-Karp max flow).
// The partitioner uses it to choose which forward values to save (Note [Rematerialization]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace kiln::passes {

class MinCut {
 public:
  static constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;

  explicit MinCut(int num_vertices);
  void add_edge(int from, int to, int64_t capacity);
  // Runs max flow from `source` to `sink`; returns the cut's total capacity.
  int64_t solve(int source, int sink);
  // After solve: whether `v` is on the source side of the minimum cut nearest the sink.
  bool on_source_side(int v) const { return reachable_.at(static_cast<size_t>(v)); }

 private:
  struct Edge {
    int to;
    int64_t capacity;
  };
  std::vector<Edge> edges_;  // edge i and i ^ 1 are each other's reverse
  std::vector<std::vector<int>> adjacency_;
  std::vector<bool> reachable_;
};

}  // namespace kiln::passes
