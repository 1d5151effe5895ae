#include "kiln/passes/fuse.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "kiln/passes/fusion_space.h"
#include "kiln/runtime/op_def.h"

namespace kiln::passes {
namespace {

class Fuser {
 public:
  Fuser(ir::Graph& g, const FusionOptions& options) : g_(g), options_(options) {
    nodes_ = g.nodes();
    for (size_t i = 0; i < nodes_.size(); ++i)
      index_[nodes_[i]] = i;
    group_end_at_.assign(nodes_.size(), -1);
  }

  bool run() {
    for (ir::Node* n : nodes_)
      if (is_fusible_pointwise(*n) || is_fusible_reduction(*n)) new_group({n});
    if (groups_.empty()) return false;
    absorb_views();
    merge_vertically();
    absorb_views();
    merge_horizontally();
    absorb_views();
    materialize();
    return true;
  }

 private:
  using Members = std::vector<ir::Node*>;  // sorted by index

  void new_group(Members m) {
    int id = static_cast<int>(groups_.size());
    for (ir::Node* n : m)
      group_of_[n] = id;
    groups_.push_back(std::move(m));
    note_span(groups_.back(), true);
  }

  // Note [Fusion cycle check]
  // A merge is valid only if no path leaves the merged set and comes back into it, where each
  // other group counts as one node. Nodes are in topological order, so an edge only goes to a
  // later index, and a path can only come back to an earlier index by a jump inside a group.
  // So the search may stop at any index past `limit`, the smallest index at or after the set's
  // last member that no group straddles: from past it, edges and groups lead further on only.
  // group_end_at_ (by a group's first member's index: its last member's index) answers "how far
  // do the groups that start by index t reach" in one prefix maximum.
  void note_span(const Members& m, bool present) {
    if (m.empty()) return;
    group_end_at_.set(index_.at(m.front()),
                      present ? static_cast<int64_t>(index_.at(m.back())) : -1);
  }
  size_t search_limit(size_t last) const {
    auto limit = static_cast<int64_t>(last);
    for (;;) {
      int64_t reach = std::max(limit, group_end_at_.prefix_max(static_cast<size_t>(limit)));
      if (reach == limit) return static_cast<size_t>(limit);
      limit = reach;
    }
  }

  // Point assignment and prefix maximum in O(log n): a segment tree over node indices.
  class MaxTree {
   public:
    void assign(size_t n, int64_t v) {
      size_ = 1;
      while (size_ < n)
        size_ *= 2;
      tree_.assign(2 * size_, v);
    }
    void set(size_t i, int64_t v) {
      size_t k = i + size_;
      tree_[k] = v;
      for (k /= 2; k >= 1; k /= 2)
        tree_[k] = std::max(tree_[2 * k], tree_[2 * k + 1]);
    }
    int64_t prefix_max(size_t last) const {  // the maximum over [0, last]
      int64_t m = -1;
      size_t lo = size_, hi = last + size_ + 1;  // half-open [lo, hi) over the leaves
      for (; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) m = std::max(m, tree_[lo++]);
        if (hi & 1) m = std::max(m, tree_[--hi]);
      }
      return m;
    }

   private:
    size_t size_ = 1;
    std::vector<int64_t> tree_;
  };

  int group(const ir::Node* n) const {
    auto it = group_of_.find(n);
    return it == group_of_.end() ? -1 : it->second;
  }

  // Would the nodes in `set` make a valid kernel? Checks the space, the outputs, the argument
  // count and that no path leaves the set and re-enters it.
  bool valid(const Members& set) {
    std::unordered_set<const ir::Node*> in(set.begin(), set.end());
    auto is_member = [&](const ir::Node* n) { return in.count(n) != 0; };
    std::vector<const ir::Node*> ordered(set.begin(), set.end());
    std::optional<GroupAnalysis> a = analyze_group(ordered, is_member, nullptr);
    if (!a) return false;
    std::unordered_set<const ir::Value*> inputs;
    int outputs = 0;
    for (const ir::Node* n : set) {
      for (const ir::Value* u : n->inputs())
        if (!is_member(u->node())) inputs.insert(u);
      for (const ir::Value* v : n->outputs()) {
        bool external = std::any_of(v->uses().begin(), v->uses().end(), [&](const ir::Use& u) {
          return u.user == nullptr || !is_member(u.user);
        });
        if (!external) continue;
        // A view of an outside value stays outside; a kernel writes only new (contiguous)
        // buffers, as the eager ops it replaces do.
        if (a->roles.at(v) == SpaceRole::ExtView || !v->type().is_contiguous()) return false;
        ++outputs;
      }
    }
    // Views of outside values are read through their roots, so count roots, not views.
    std::unordered_set<const ir::Value*> buffers;
    for (const ir::Value* u : inputs) {
      auto it = a->views.find(u);
      buffers.insert(it == a->views.end() ? u : it->second.root);
    }
    for (const auto& [v, view] : a->views)
      buffers.insert(view.root);
    if (static_cast<int>(buffers.size()) + outputs > options_.max_kernel_args) return false;
    return !has_cycle(set, is_member);
  }

  template <class IsMember>
  bool has_cycle(const Members& set, const IsMember& is_member) const {
    // Not cut off at the set's last node: through another group (contracted below) a path can
    // come back from a node after it. Cut off past search_limit (Note [Fusion cycle check]).
    size_t limit = search_limit(index_.at(set.back()));
    std::vector<const ir::Node*> stack;
    std::unordered_set<const ir::Node*> seen;
    auto push_users = [&](const ir::Node* n, bool from_member) {
      for (const ir::Value* v : n->outputs())
        for (const ir::Use& u : v->uses()) {
          if (u.user == nullptr || index_.at(u.user) > limit) continue;
          if (from_member && is_member(u.user)) continue;
          if (seen.insert(u.user).second) stack.push_back(u.user);
        }
    };
    for (const ir::Node* n : set)
      push_users(n, true);
    while (!stack.empty()) {
      const ir::Node* n = stack.back();
      stack.pop_back();
      if (is_member(n)) return true;
      push_users(n, false);
      // Another group becomes one node: what reaches one of its members reaches them all. (Else
      // a path through an unfused op between groups is missed: {log, convert} merged while log
      // feeds group A, and group A feeds a column sum that convert reads.)
      int g = group(n);
      if (g < 0) continue;
      for (const ir::Node* m : groups_[static_cast<size_t>(g)])
        if (!is_member(m) && seen.insert(m).second) stack.push_back(m);
    }
    return false;
  }

  Members united(const Members& a, const Members& b, const Members& extra = {}) const {
    Members m = a;
    m.insert(m.end(), b.begin(), b.end());
    m.insert(m.end(), extra.begin(), extra.end());
    std::sort(m.begin(), m.end(),
              [&](const ir::Node* x, const ir::Node* y) { return index_.at(x) < index_.at(y); });
    m.erase(std::unique(m.begin(), m.end()), m.end());
    return m;
  }

  bool try_merge(int a, int b, const Members& extra = {}) {
    if (a == b) return false;
    size_t count = groups_[static_cast<size_t>(a)].size() + groups_[static_cast<size_t>(b)].size() +
                   extra.size();
    if (count > static_cast<size_t>(options_.max_group_nodes)) return false;
    Members m = united(groups_[static_cast<size_t>(a)], groups_[static_cast<size_t>(b)], extra);
    if (!within_span(m) || !valid(m)) return false;
    int keep = std::min(a, b), drop = std::max(a, b);
    // The dropped group's span goes first: the merged group may start at the same node (a view
    // absorbed into the higher-numbered group), and its span must stay recorded.
    note_span(groups_[static_cast<size_t>(drop)], false);
    groups_[static_cast<size_t>(drop)].clear();
    replace_group(keep, std::move(m));
    return true;
  }

  bool within_span(const Members& m) const {
    return index_.at(m.back()) - index_.at(m.front()) <=
           static_cast<size_t>(options_.max_group_span);
  }

  void replace_group(int id, Members m) {
    Members& g = groups_[static_cast<size_t>(id)];
    note_span(g, false);
    for (ir::Node* n : m)
      group_of_[n] = id;
    g = std::move(m);
    note_span(g, true);
  }

  static bool is_view(const ir::Node* n) {
    return n->kind() == ir::NodeKind::Op && n->op()->has(kView);
  }

  // A view whose users all sit in one group joins it (later views first, so chains join whole).
  void absorb_views() {
    for (size_t i = nodes_.size(); i-- > 0;) {
      ir::Node* n = nodes_[i];
      if (!is_view(n) || group(n) >= 0) continue;
      int target = -1;
      bool ok = n->output(0)->has_uses();
      for (const ir::Use& u : n->output(0)->uses()) {
        int gu = u.user == nullptr ? -1 : group(u.user);
        if (gu < 0 || (target >= 0 && gu != target)) ok = false;
        target = gu;
      }
      if (!ok) continue;
      Members m = united(groups_[static_cast<size_t>(target)], {n});
      if (!within_span(m) || !valid(m)) continue;
      replace_group(target, std::move(m));
    }
  }

  // The view nodes between a value and the op that computed it.
  static const ir::Node* producer_through_views(const ir::Value* v, Members* views) {
    const ir::Node* p = v->node();
    while (is_view(p)) {
      views->push_back(const_cast<ir::Node*>(p));
      p = p->input(0)->node();
    }
    return p;
  }

  void merge_vertically() {
    for (ir::Node* n : nodes_) {
      for (const ir::Value* u : n->inputs()) {
        int gn = group(n);
        if (gn < 0) break;
        Members views;
        const ir::Node* p = producer_through_views(u, &views);
        int gp = group(p);
        if (gp < 0 || gp == gn) continue;
        std::erase_if(views, [&](const ir::Node* v) { return group(v) >= 0; });
        try_merge(gp, gn, views);
      }
    }
  }

  void merge_horizontally() {
    // Only groups over the same space can merge: bucket them by it, integer spaces in numeric
    // order (symbolic sizes after integers, by their text).
    struct SpaceOrder {
      static int cmp(const SymInt& a, const SymInt& b) {
        if (!a.is_symbolic() && !b.is_symbolic()) {
          int64_t x = *a.maybe_int(), y = *b.maybe_int();
          return x < y ? -1 : (x > y ? 1 : 0);
        }
        if (a.is_symbolic() != b.is_symbolic()) return a.is_symbolic() ? 1 : -1;
        return a.str().compare(b.str());
      }
      bool operator()(const std::pair<SymShape, std::vector<bool>>& a,
                      const std::pair<SymShape, std::vector<bool>>& b) const {
        for (size_t i = 0; i < std::min(a.first.size(), b.first.size()); ++i)
          if (int c = cmp(a.first[i], b.first[i])) return c < 0;
        if (a.first.size() != b.first.size()) return a.first.size() < b.first.size();
        return a.second < b.second;
      }
    };
    std::map<std::pair<SymShape, std::vector<bool>>, std::vector<int>, SpaceOrder> buckets;
    for (size_t i = 0; i < groups_.size(); ++i) {
      if (groups_[i].empty()) continue;
      std::vector<const ir::Node*> ordered(groups_[i].begin(), groups_[i].end());
      std::unordered_set<const ir::Node*> in(ordered.begin(), ordered.end());
      std::optional<GroupAnalysis> a = analyze_group(
          ordered, [&](const ir::Node* x) { return in.count(x) != 0; }, nullptr);
      if (a) buckets[{a->space.full, a->space.reduced}].push_back(static_cast<int>(i));
    }
    for (auto& [space, ids] : buckets) {
      for (size_t x = 0; x < ids.size(); ++x) {
        if (groups_[static_cast<size_t>(ids[x])].empty()) continue;
        for (size_t y = x + 1; y < ids.size(); ++y) {
          if (groups_[static_cast<size_t>(ids[y])].empty()) continue;
          int keep = std::min(ids[x], ids[y]);
          if (try_merge(ids[x], ids[y])) ids[x] = keep;
        }
      }
    }
  }

  // Replaces each group by a prim.fusion_group node, then restores a topological order.
  void materialize() {
    for (Members& m : groups_) {
      if (m.empty()) continue;
      std::unordered_set<const ir::Node*> in(m.begin(), m.end());
      std::vector<ir::Value*> inputs;
      std::vector<ir::Value*> outputs;
      for (ir::Node* n : m) {
        for (ir::Value* u : n->inputs())
          if (in.count(u->node()) == 0 &&
              std::find(inputs.begin(), inputs.end(), u) == inputs.end())
            inputs.push_back(u);
        for (ir::Value* v : n->outputs())
          if (std::any_of(v->uses().begin(), v->uses().end(), [&](const ir::Use& u) {
                return u.user == nullptr || in.count(u.user) == 0;
              }))
            outputs.push_back(v);
      }
      auto sub = std::make_shared<ir::Graph>();
      sub->set_symbols_from(g_);
      std::unordered_map<const ir::Value*, ir::Value*> map;
      for (ir::Value* u : inputs)
        map[u] = sub->add_input(u->type());
      for (ir::Node* n : m) {
        std::vector<ir::Value*> args;
        for (ir::Value* u : n->inputs())
          args.push_back(map.at(u));
        ir::Node* copy = sub->create_copy(*n, args);
        for (size_t k = 0; k < n->num_outputs(); ++k)
          map[n->output(k)] = copy->output(k);
      }
      std::vector<ir::TensorType> types;
      for (ir::Value* v : outputs) {
        sub->add_output(map.at(v));
        types.push_back(v->type());
      }
      g_.set_insert_point(m.front());
      ir::Node* node = g_.create_fusion_group(inputs, sub, types);
      g_.set_insert_point(nullptr);
      for (size_t k = 0; k < outputs.size(); ++k)
        outputs[k]->replace_all_uses_with(node->output(k));
      for (size_t i = m.size(); i-- > 0;)
        g_.erase(m[i]);
    }
    restore_topological_order();
  }

  // A group node sits where its first member was, which can precede the producers of its other
  // inputs: reorder so that every node follows its producers, keeping the order otherwise.
  void restore_topological_order() {
    std::vector<ir::Node*> order;
    std::unordered_set<const ir::Node*> placed;
    std::vector<std::pair<ir::Node*, size_t>> stack;
    for (ir::Node* root : g_.nodes()) {
      if (placed.count(root) != 0) continue;
      stack.emplace_back(root, 0);
      while (!stack.empty()) {
        auto& [n, next] = stack.back();
        if (next < n->num_inputs()) {
          ir::Node* p = n->input(next++)->node();
          if (placed.count(p) == 0) stack.emplace_back(p, 0);
          continue;
        }
        if (placed.insert(n).second) order.push_back(n);
        stack.pop_back();
      }
    }
    for (ir::Node* n : order)
      g_.move_before(n, nullptr);
  }

  ir::Graph& g_;
  FusionOptions options_;
  std::vector<ir::Node*> nodes_;
  std::unordered_map<const ir::Node*, size_t> index_;
  std::unordered_map<const ir::Node*, int> group_of_;
  std::vector<Members> groups_;
  MaxTree group_end_at_;  // Note [Fusion cycle check]
};

}  // namespace

bool fuse(ir::Graph& graph, const FusionOptions& options) {
  return Fuser(graph, options).run();
}

}  // namespace kiln::passes
