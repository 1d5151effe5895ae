// mark_dynamic (frontend/compile.h): the marks live beside the tensors, keyed by TensorImpl and
// forgotten when it dies, as torch keeps them on the tensor object.
#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kiln/base/error.h"
#include "kiln/base/shape.h"
#include "kiln/frontend/compile.h"

namespace kiln {
namespace {

struct Marks {
  std::weak_ptr<TensorImpl> impl;  // the entry is stale once this expires
  std::vector<int64_t> dims;
};

struct Registry {
  std::mutex mu;
  std::unordered_map<const TensorImpl*, Marks> marks;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void mark_dynamic(const Tensor& t, int64_t dim) {
  KILN_CHECK(t.defined(), "mark_dynamic: the tensor is undefined");
  int64_t d = wrap_dim("mark_dynamic", dim, t.dim());
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::erase_if(r.marks, [](const auto& kv) { return kv.second.impl.expired(); });
  Marks& m = r.marks[t.impl()];
  if (m.impl.lock() != t.impl_ptr()) m = Marks{t.impl_ptr(), {}};
  if (std::find(m.dims.begin(), m.dims.end(), d) == m.dims.end()) m.dims.push_back(d);
  std::sort(m.dims.begin(), m.dims.end());
}

std::vector<int64_t> dynamic_dims(const Tensor& t) {
  if (!t.defined()) return {};
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.marks.find(t.impl());
  if (it == r.marks.end() || it->second.impl.lock() != t.impl_ptr()) return {};
  return it->second.dims;
}

}  // namespace kiln
