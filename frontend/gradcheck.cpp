#include "kiln/frontend/gradcheck.h"

#include <cmath>
#include <random>

#include "kiln/runtime/api/autograd.h"
#include "kiln/runtime/api/factories.h"

namespace kiln::autograd {
namespace {

// Row-major position `linear` of `t` as an element pointer (t is float64 on the CPU).
double* element(const Tensor& t, int64_t linear) {
  auto* p = static_cast<double*>(t.impl()->data());
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    int64_t size = t.size(d);
    p += (linear % size) * t.stride(d);
    linear /= size;
  }
  return p;
}

std::vector<double> values(const Tensor& t) {
  return t.to(kFloat64).contiguous().to_vector<double>();
}

bool checked_output(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.requires_grad() && t.numel() > 0;
}

[[noreturn]] void report(const std::string& what) {
  KILN_ERROR("gradcheck: {}", what);
}

}  // namespace

bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& opt) {
  std::vector<size_t> diff;  // indices of differentiated inputs
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    KILN_CHECK(t.dtype() == kFloat64 && t.device().type == DeviceType::CPU,
               "gradcheck: input {} requires grad but is {} on {}; finite differences need "
               "float64 CPU inputs",
               i, t.dtype(), t.device());
    diff.push_back(i);
  }
  KILN_CHECK(!diff.empty(), "gradcheck: no input requires grad");
  std::vector<Tensor> outputs = fn(inputs);
  std::vector<size_t> outs;
  for (size_t o = 0; o < outputs.size(); ++o)
    if (checked_output(outputs[o])) outs.push_back(o);

  // numerical[o][j] = d outputs[o] / d inputs[diff[j]], flattened as [out elements][in elements].
  std::vector<std::vector<std::vector<double>>> numerical(
      outputs.size(), std::vector<std::vector<double>>(diff.size()));
  for (size_t j = 0; j < diff.size(); ++j) {
    const Tensor& x = inputs[diff[j]];
    for (size_t o : outs)
      numerical[o][j].assign(static_cast<size_t>(outputs[o].numel() * x.numel()), 0.0);
    for (int64_t e = 0; e < x.numel(); ++e) {
      double* p = element(x, e);
      double orig = *p;
      // Read the values right away: an output may be a view of the perturbed input.
      auto evaluate = [&](double at) {
        *p = at;
        std::vector<Tensor> out = fn(inputs);
        std::vector<std::vector<double>> v(outputs.size());
        for (size_t o : outs)
          v[o] = values(out[o]);
        return v;
      };
      std::vector<std::vector<double>> plus, minus;
      // Grad mode stays on: fn may itself differentiate (a gradient penalty, gradgradcheck).
      plus = evaluate(orig + opt.eps);
      minus = evaluate(orig - opt.eps);
      *p = orig;
      for (size_t o : outs) {
        const std::vector<double>& a = plus[o];
        const std::vector<double>& b = minus[o];
        for (size_t k = 0; k < a.size(); ++k)
          numerical[o][j][k * x.numel() + e] = (a[k] - b[k]) / (2 * opt.eps);
      }
    }
  }

  std::vector<Tensor> diff_inputs;
  for (size_t j : diff)
    diff_inputs.push_back(inputs[j]);
  for (size_t o : outs) {
    const Tensor& out = outputs[o];
    for (int64_t k = 0; k < out.numel(); ++k) {
      std::vector<double> onehot(static_cast<size_t>(out.numel()), 0.0);
      onehot[k] = 1.0;
      Tensor v = from_vector(onehot, out.sizes()).to(out.dtype());
      std::vector<Tensor> g = grad({out}, diff_inputs, {v}, /*retain_graph=*/true,
                                   /*create_graph=*/false, /*allow_unused=*/true);
      for (size_t j = 0; j < diff.size(); ++j) {
        const Tensor& x = inputs[diff[j]];
        if (g[j].defined()) {
          KILN_CHECK(g[j].sizes() == x.sizes(),
                     "gradcheck: the gradient for input {} has shape {} but the input has shape {}",
                     diff[j], shape_str(g[j].sizes()), shape_str(x.sizes()));
        }
        std::vector<double> a =
            g[j].defined() ? values(g[j]) : std::vector<double>(static_cast<size_t>(x.numel()));
        for (int64_t e = 0; e < x.numel(); ++e) {
          double an = a[static_cast<size_t>(e)];
          double nu = numerical[o][j][static_cast<size_t>(k * x.numel() + e)];
          if (std::abs(an - nu) <= opt.atol + opt.rtol * std::abs(nu)) continue;
          if (std::isnan(an) && std::isnan(nu)) continue;
          if (!opt.raise_exception) return false;
          report(fmt::format(
              "Jacobian mismatch for output {} (element {}) with respect to input {} (element "
              "{}): analytical {} vs numerical {} (shapes: output {}, input {})",
              o, k, diff[j], e, an, nu, shape_str(out.sizes()), shape_str(x.sizes())));
        }
      }
    }
  }
  return true;
}

bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& opt) {
  std::vector<Tensor> outputs = fn(inputs);
  std::mt19937 rng(1234);
  std::normal_distribution<double> normal;
  std::vector<Tensor> grad_outputs;
  std::vector<size_t> outs;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!checked_output(outputs[o])) continue;
    std::vector<double> v(static_cast<size_t>(outputs[o].numel()));
    for (double& x : v)
      x = normal(rng);
    grad_outputs.push_back(from_vector(v, outputs[o].sizes(), requires_grad()));
    outs.push_back(o);
  }
  KILN_CHECK(!outs.empty(), "gradgradcheck: no output requires grad");
  size_t n = inputs.size();
  GradcheckFn first_order = [&fn, &outs, n](const std::vector<Tensor>& all) {
    std::vector<Tensor> ins(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<Tensor> vs(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
    std::vector<Tensor> inner = fn(ins);
    std::vector<Tensor> diff_outs, diff_ins;
    for (size_t o : outs)
      diff_outs.push_back(inner[o]);
    for (const Tensor& t : ins)
      if (t.defined() && t.requires_grad()) diff_ins.push_back(t);
    std::vector<Tensor> g = grad(diff_outs, diff_ins, vs, /*retain_graph=*/true,
                                 /*create_graph=*/true, /*allow_unused=*/true);
    return g;
  };
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), grad_outputs.begin(), grad_outputs.end());
  return gradcheck(first_order, all, opt);
}

}  // namespace kiln::autograd
