#include "kiln/passes/min_cut.h"

#include <algorithm>
#include <queue>

namespace kiln::passes {

MinCut::MinCut(int num_vertices) : adjacency_(static_cast<size_t>(num_vertices)) {}

void MinCut::add_edge(int from, int to, int64_t capacity) {
  adjacency_.at(static_cast<size_t>(from)).push_back(static_cast<int>(edges_.size()));
  edges_.push_back({to, capacity});
  adjacency_.at(static_cast<size_t>(to)).push_back(static_cast<int>(edges_.size()));
  edges_.push_back({from, 0});
}

int64_t MinCut::solve(int source, int sink) {
  const size_t n = adjacency_.size();
  int64_t total = 0;
  std::vector<int> via(n);
  while (true) {
    // Shortest augmenting path by BFS over edges with residual capacity.
    std::fill(via.begin(), via.end(), -1);
    std::queue<int> queue;
    queue.push(source);
    via[static_cast<size_t>(source)] = -2;
    while (!queue.empty() && via[static_cast<size_t>(sink)] == -1) {
      int u = queue.front();
      queue.pop();
      for (int e : adjacency_[static_cast<size_t>(u)]) {
        const Edge& edge = edges_[static_cast<size_t>(e)];
        if (edge.capacity > 0 && via[static_cast<size_t>(edge.to)] == -1) {
          via[static_cast<size_t>(edge.to)] = e;
          queue.push(edge.to);
        }
      }
    }
    if (via[static_cast<size_t>(sink)] == -1) break;
    int64_t push = kInfinite;
    for (int v = sink; v != source;
         v = edges_[static_cast<size_t>(via[static_cast<size_t>(v)] ^ 1)].to)
      push = std::min(push, edges_[static_cast<size_t>(via[static_cast<size_t>(v)])].capacity);
    for (int v = sink; v != source;
         v = edges_[static_cast<size_t>(via[static_cast<size_t>(v)] ^ 1)].to) {
      edges_[static_cast<size_t>(via[static_cast<size_t>(v)])].capacity -= push;
      edges_[static_cast<size_t>(via[static_cast<size_t>(v)] ^ 1)].capacity += push;
    }
    total += push;
    if (total >= kInfinite) break;  // no finite cut exists
  }
  // Of all minimum cuts, the one nearest the sink: the sink side is what can still reach the
  // sink in the residual graph, and everything else is the source side. For the partitioner
  // this breaks ties towards saving later values, so equal-byte choices recompute less.
  std::vector<bool> reaches_sink(n, false);
  std::queue<int> queue;
  queue.push(sink);
  reaches_sink[static_cast<size_t>(sink)] = true;
  while (!queue.empty()) {
    int v = queue.front();
    queue.pop();
    for (int e : adjacency_[static_cast<size_t>(v)]) {
      // Edge e leaves v; its reverse e ^ 1 enters v from edges_[e].to.
      int u = edges_[static_cast<size_t>(e)].to;
      if (edges_[static_cast<size_t>(e ^ 1)].capacity > 0 &&
          !reaches_sink[static_cast<size_t>(u)]) {
        reaches_sink[static_cast<size_t>(u)] = true;
        queue.push(u);
      }
    }
  }
  reachable_.assign(n, false);
  for (size_t v = 0; v < n; ++v)
    reachable_[v] = !reaches_sink[v];
  return total;
}

}  // namespace kiln::passes
