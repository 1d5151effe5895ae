#include "kiln/frontend/optim/optimizer.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "kiln/base/error.h"
#include "kiln/base/profiler.h"
#include "kiln/base/shape.h"
#include "kiln/frontend/optim/multi_tensor_kernel.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/tensor_impl.h"

namespace kiln::optim {

ScalarTable::ScalarTable(DType dtype, size_t rows, size_t columns)
    : dtype_(dtype), columns_(columns) {
  KILN_CHECK(dtype == kFloat32 || dtype == kFloat64, "optimizer: no scalar table for dtype {}",
             dtype_name(dtype));
  if (dtype == kFloat32) {
    f32_.assign(rows * columns, 0.0f);
  } else {
    f64_.assign(rows * columns, 0.0);
  }
}

void ScalarTable::set(size_t row, size_t column, double value) {
  size_t at = row * columns_ + column;
  if (dtype_ == kFloat32) {
    f32_.at(at) = static_cast<float>(value);
  } else {
    f64_.at(at) = value;
  }
}

const void* ScalarTable::row(size_t r) const {
  return dtype_ == kFloat32 ? static_cast<const void*>(f32_.data() + r * columns_)
                            : static_cast<const void*>(f64_.data() + r * columns_);
}

Optimizer::Optimizer(std::vector<Tensor> params, std::string name)
    : params_(std::move(params)), name_(std::move(name)) {
  KILN_CHECK(!params_.empty(), "{}: optimizer got an empty parameter list", name_);
  std::unordered_map<const TensorImpl*, size_t> seen;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    KILN_CHECK(p.defined(), "{}: parameter {} is an undefined tensor", name_, i);
    KILN_CHECK(p.is_leaf(), "{}: can't optimize a non-leaf Tensor (parameter {}, shape {})", name_,
               i, shape_str(p.sizes()));
    auto [it, added] = seen.emplace(p.impl(), i);
    KILN_CHECK(added, "{}: parameter {} is the same tensor as parameter {}; each may appear once",
               name_, i, it->second);
  }
  state_.resize(params_.size());
  steps_.assign(params_.size(), 0);
}

Optimizer::~Optimizer() = default;

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : params_) {
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = Tensor();
    } else {
      g.zero_();  // in place, as torch: a reference to the gradient sees the zeros
    }
  }
}

std::vector<Optimizer::Pending> Optimizer::with_gradients() const {
  std::vector<Pending> pending;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    KILN_CHECK(g.sizes() == p.sizes(),
               "{}: the gradient of parameter {} has shape {}, the parameter {}", name_, i,
               shape_str(g.sizes()), shape_str(p.sizes()));
    KILN_CHECK(g.dtype() == p.dtype() && g.device() == p.device(),
               "{}: the gradient of parameter {} is {} on {}, the parameter {} on {}", name_, i,
               dtype_name(g.dtype()), g.device().str(), dtype_name(p.dtype()), p.device().str());
    pending.push_back({i, g});
  }
  return pending;
}

std::vector<Tensor>& Optimizer::state_of(size_t index, int count) {
  std::vector<Tensor>& s = state_[index];
  if (s.empty()) {
    for (int k = 0; k < count; ++k)
      s.push_back(zeros_like(params_[index]).contiguous());
  }
  return s;
}

namespace {

struct Span {
  uintptr_t begin, end;
};

void add_span(std::vector<Span>& spans, const Tensor& t) {
  auto begin = reinterpret_cast<uintptr_t>(t.raw_data());
  spans.push_back({begin, begin + static_cast<uintptr_t>(t.numel()) * t.element_size()});
}

}  // namespace

const detail::MultiTensorKernel* Optimizer::kernel_for(const std::vector<Pending>& pending,
                                                       std::optional<bool> fused) {
  if (fused == false || pending.empty()) return nullptr;
  const DType dtype = params_[pending.front().index].dtype();
  auto why_not = [&]() -> std::string {
    if (dtype != kFloat32 && dtype != kFloat64)
      return fmt::format("the parameters are {}, not float32 or float64", dtype_name(dtype));
    std::vector<Span> spans;
    for (const Pending& p : pending) {
      const Tensor& param = params_[p.index];
      if (param.dtype() != dtype) return "the parameters have different dtypes";
      if (!param.device().is_cpu())
        return fmt::format("a parameter is on {}", param.device().str());
      if (!param.is_contiguous()) return "a parameter is not contiguous";
      add_span(spans, param);
      if (p.grad.is_contiguous()) add_span(spans, p.grad);  // a strided one is copied
      for (const Tensor& s : state_[p.index])
        add_span(spans, s);
    }
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < spans.size(); ++i) {
      if (spans[i].begin < spans[i - 1].end && spans[i].begin != spans[i].end)
        return "parameters, gradients or states share memory";
    }
    return "";
  };
  std::string reason = why_not();
  if (reason.empty()) {
    auto it = kernels_.find(dtype);
    if (it == kernels_.end()) {
      profiler::RecordScope scope(profiler::ScopeKind::Compile, "compile", name_);
      it = kernels_.emplace(dtype, build_kernel(dtype)).first;
    }
    if (it->second) return it->second.get();
    reason = "this build cannot compile it (see the warning above)";
  }
  KILN_CHECK(fused != true, "{}: fused=True, but the step cannot run as one compiled kernel: {}",
             name_, reason);
  return nullptr;
}

void Optimizer::launch(const detail::MultiTensorKernel& kernel, const std::vector<Pending>& pending,
                       const ScalarTable& scalars) {
  std::vector<detail::MultiTensorKernel::Row> rows;
  std::vector<Tensor> keep;  // contiguous copies of strided gradients
  for (size_t r = 0; r < pending.size(); ++r) {
    const Pending& p = pending[r];
    detail::MultiTensorKernel::Row row;
    row.buffers.push_back(params_[p.index].raw_data());
    Tensor g = p.grad.is_contiguous() ? p.grad : p.grad.contiguous();
    keep.push_back(g);
    row.buffers.push_back(g.raw_data());
    for (const Tensor& s : state_[p.index])
      row.buffers.push_back(s.raw_data());
    row.numel = params_[p.index].numel();
    row.scalars = scalars.row(r);
    rows.push_back(std::move(row));
  }
  kernel.run(rows);
  // The kernel wrote the parameters and states behind autograd's back: bump their versions so
  // that a graph that saved one of them sees the change, as an in-place op would.
  for (const Pending& p : pending) {
    params_[p.index].impl()->bump_version();
    for (const Tensor& s : state_[p.index])
      s.impl()->bump_version();
  }
}

}  // namespace kiln::optim
