// OpInfo entries of the product composites: outer, addmm, baddbmm and einsum. The einsum
// reference sums over every assignment of the subscripts, with the equation spelled out
// explicitly per case (ellipses and implicit outputs written as letters), so that it shares no
// parsing with the implementation.
#include <cmath>
#include <map>

#include "opinfo/index_map_ref.h"

namespace kiln_test {
namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

// sum over the letters not in `out` of prod_k in[k][its letters], size-1 dims broadcasting.
RefTensor ref_einsum(const std::vector<RefTensor>& in, const std::vector<std::string>& terms,
                     const std::string& out, DType dtype) {
  std::map<char, int64_t> size;
  for (size_t k = 0; k < in.size(); ++k) {
    for (size_t d = 0; d < terms[k].size(); ++d) {
      int64_t s = in[k].sizes[d];
      if (s != 1 || size.count(terms[k][d]) == 0) size[terms[k][d]] = s;
    }
  }
  std::string summed;
  for (auto [c, s] : size)
    if (out.find(c) == std::string::npos) summed += c;
  Shape out_sizes, summed_sizes;
  for (char c : out)
    out_sizes.push_back(size[c]);
  for (char c : summed)
    summed_sizes.push_back(size[c]);
  return ref_from_index(out_sizes, dtype, [&](const Index& oi) {
    double acc = 0;
    for (int64_t s = 0; s < ref_numel(summed_sizes); ++s) {
      Index si = unravel(s, summed_sizes);
      std::map<char, int64_t> at;
      for (size_t i = 0; i < out.size(); ++i)
        at[out[i]] = oi[i];
      for (size_t i = 0; i < summed.size(); ++i)
        at[summed[i]] = si[i];
      double p = 1;
      for (size_t k = 0; k < in.size(); ++k) {
        Index idx;
        for (size_t d = 0; d < terms[k].size(); ++d)
          idx.push_back(in[k].sizes[d] == 1 ? 0 : at[terms[k][d]]);
        p *= in[k].at(idx);
      }
      acc += p;
    }
    return round_to(acc, dtype);
  });
}

struct EinsumCase {
  std::string equation;
  std::vector<Shape> shapes;
  std::vector<std::string> ref_terms;  // the subscripts of each operand, ellipsis spelled out
  std::string ref_out;
  Layout layout = Layout::Contiguous;  // of every operand
};

const std::vector<EinsumCase>& einsum_cases() {
  static const std::vector<EinsumCase> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}, {"ij", "jk"}, "ik"},
      {"ij,jk", {{3, 4}, {4, 5}}, {"ij", "jk"}, "ik", Layout::Transposed},
      {"ij, jk -> ki", {{3, 4}, {4, 5}}, {"ij", "jk"}, "ki", Layout::Strided},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, {"bij", "bjk"}, "bik"},
      {"bij,bjk->bik", {{1, 3, 4}, {2, 4, 5}}, {"bij", "bjk"}, "bik"},  // broadcast batch
      {"ii->i", {{4, 4}}, {"ii"}, "i"},
      {"ii", {{4, 4}}, {"ii"}, ""},
      {"iji->j", {{3, 2, 3}}, {"iji"}, "j", Layout::Transposed},
      {"ij->ji", {{3, 4}}, {"ij"}, "ji"},
      {"ij->", {{3, 4}}, {"ij"}, ""},
      {"ij->j", {{3, 4}}, {"ij"}, "j", Layout::Strided},
      {"i,i->", {{5}, {5}}, {"i", "i"}, ""},
      {"i,j->ij", {{3}, {4}}, {"i", "j"}, "ij"},
      {"i,j", {{3}, {4}}, {"i", "j"}, "ij"},
      {"ij,ij->ij", {{3, 4}, {3, 4}}, {"ij", "ij"}, "ij"},
      {"ij,ij->", {{3, 4}, {3, 4}}, {"ij", "ij"}, ""},
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}, {"bn", "anm", "bm"}, "ba"},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}, {"ij", "jk", "kl"}, "il"},
      {"Ab,bC->CA", {{2, 3}, {3, 4}}, {"Ab", "bC"}, "CA"},
      {"ba,aC", {{3, 2}, {2, 4}}, {"ba", "aC"}, "Cb"},  // implicit: upper case sorts first
      {"...ij,...jk->...ik", {{2, 3, 4}, {4, 5}}, {"xij", "jk"}, "xik"},
      {"...ij,...jk", {{2, 1, 3, 4}, {3, 4, 2}}, {"xyij", "yjk"}, "xyik"},
      {"...i->...", {{2, 3, 4}}, {"xyi"}, "xy"},
      {"i...->i", {{3, 2, 2}}, {"ixy"}, "i"},
      {"b...,b->...b", {{2, 3}, {2}}, {"bx", "b"}, "xb"},
      {"ij,jk->ik", {{3, 0}, {0, 4}}, {"ij", "jk"}, "ik"},  // contracted size 0: zeros
      {"ij,jk->ik", {{0, 4}, {4, 2}}, {"ij", "jk"}, "ik"},
      {"i->", {{0}}, {"i"}, ""},
      {"ij,jk->ik", {{3, 1}, {4, 5}}, {"ij", "jk"}, "ik"},  // size-1 j broadcasts
      {"ik,jk->ijk", {{2, 3}, {4, 3}}, {"ik", "jk"}, "ijk"},
      {"bij,bkj->bik", {{2, 3, 4}, {2, 5, 4}}, {"bij", "bkj"}, "bik", Layout::Transposed},
  };
  return cases;
}

Sample einsum_sample(const EinsumCase& c, DType dt, uint32_t& seed) {
  std::vector<Tensor> inputs;
  std::string shapes;
  for (const Shape& s : c.shapes) {
    inputs.push_back(make_input(s, dt, c.layout, -4, 4, seed++));
    shapes += "[" + shape_name(s) + "]";
  }
  std::string eq = c.equation;
  Sample sample = make_sample(
      fmt::format("{}_'{}'_{}{}", kiln::dtype_name(dt), eq, shapes, layout_name(c.layout)), inputs,
      [eq](const std::vector<Tensor>& in) { return std::vector{kiln::einsum(eq, in)}; },
      [c, dt](const std::vector<RefTensor>& in) {
        return std::vector{ref_einsum(in, c.ref_terms, c.ref_out, dt)};
      });
  if (dt == kiln::kFloat32) sample.atol = 1e-4;  // sums of up to 60 products of values <= 4
  return sample;
}

KILN_REGISTER_OPINFO(einsum_info, [] {
  OpInfo info{"einsum", {"bmm", "sum", "index_select", "permute", "expand", "mul"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 2600;
    for (DType dt : {kiln::kFloat64, kiln::kFloat32}) {
      for (const EinsumCase& c : einsum_cases())
        out.push_back(einsum_sample(c, dt, seed));
    }
    // Integers take the multiply-and-sum path instead of bmm.
    for (DType dt : {kiln::kInt64, kiln::kInt32}) {
      for (size_t i : {0, 4, 6, 12, 16, 21, 25})
        out.push_back(einsum_sample(einsum_cases()[i], dt, seed));
    }
    return out;
  };
  return info;
}());

KILN_REGISTER_OPINFO(outer_info, [] {
  OpInfo info{"outer", {"mul", "unsqueeze"}};
  info.samples = [] {
    std::vector<Sample> out;
    uint32_t seed = 2700;
    const std::vector<std::pair<Shape, Shape>> shapes = {{{3}, {4}}, {{0}, {3}}, {{5}, {1}}};
    for (DType dt : {kiln::kFloat64, kiln::kFloat32, kiln::kInt64}) {
      for (const auto& [a, b] : shapes) {
        for (Layout l : {Layout::Contiguous, Layout::Strided}) {
          out.push_back(make_sample(
              fmt::format("{}_[{}]_[{}]_{}", kiln::dtype_name(dt), shape_name(a), shape_name(b),
                          layout_name(l)),
              {make_input(a, dt, l, -5, 5, seed), make_input(b, dt, l, -5, 5, seed + 1)},
              [](const std::vector<Tensor>& in) { return std::vector{kiln::outer(in[0], in[1])}; },
              [dt](const std::vector<RefTensor>& in) {
                return std::vector{ref_einsum(in, {"i", "j"}, "ij", dt)};
              }));
          seed += 2;
        }
      }
    }
    return out;
  };
  return info;
}());

// beta * self + alpha * product, self broadcast; beta = 0 ignores self (NaN included).
struct AddProductCase {
  Shape self, a, b;
  double beta, alpha;
  Layout layout = Layout::Contiguous;  // of the two factors
  bool nan_self = false;
};

OpInfo add_product_info(const char* name, bool batched) {
  OpInfo info{name, {batched ? "bmm" : "mm", "add", "mul_scalar"}};
  info.samples = [name, batched] {
    std::vector<AddProductCase> cases;
    if (batched) {
      cases = {
          {{2, 3, 5}, {2, 3, 4}, {2, 4, 5}, 1, 1},
          {{3, 5}, {2, 3, 4}, {2, 4, 5}, 0.5, 2, Layout::Transposed},
          {{5}, {2, 3, 4}, {2, 4, 5}, -1, 0.25, Layout::Strided},
          {{}, {2, 3, 4}, {2, 4, 5}, 2, 1},
          {{2, 3, 5}, {2, 3, 4}, {2, 4, 5}, 0, 1, Layout::Contiguous, true},
          {{2, 3, 5}, {2, 3, 0}, {2, 0, 5}, 1, 3},
          {{0, 3, 5}, {0, 3, 4}, {0, 4, 5}, 1, 1},
      };
    } else {
      cases = {
          {{3, 5}, {3, 4}, {4, 5}, 1, 1},
          {{5}, {3, 4}, {4, 5}, 0.5, 2, Layout::Transposed},
          {{3, 1}, {3, 4}, {4, 5}, -1, 0.25, Layout::Strided},
          {{}, {3, 4}, {4, 5}, 2, 1},
          {{3, 5}, {3, 4}, {4, 5}, 0, 1, Layout::Contiguous, true},
          {{3, 5}, {3, 4}, {4, 5}, 0, 2.5, Layout::Contiguous, true},
          {{3, 5}, {3, 0}, {0, 5}, 1, 3},
          {{1, 5}, {0, 4}, {4, 5}, 1, 1},
      };
    }
    std::vector<Sample> out;
    uint32_t seed = batched ? 2800 : 2900;
    for (DType dt : {kiln::kFloat64, kiln::kFloat32}) {
      for (const AddProductCase& c : cases) {
        Tensor self = make_input(c.self, dt, Layout::Contiguous, -1, 1, seed++);
        if (c.nan_self) self = kiln::full(c.self, std::nan(""), kiln::TensorOptions(dt));
        double beta = c.beta, alpha = c.alpha;
        out.push_back(make_sample(
            fmt::format("{}_{}_self[{}]{}_[{}]_[{}]{}_beta{}_alpha{}", name, kiln::dtype_name(dt),
                        shape_name(c.self), c.nan_self ? "nan" : "", shape_name(c.a),
                        shape_name(c.b), layout_name(c.layout), beta, alpha),
            {self, make_input(c.a, dt, c.layout, -1, 1, seed),
             make_input(c.b, dt, c.layout, -1, 1, seed + 1)},
            [batched, beta, alpha](const std::vector<Tensor>& in) {
              return std::vector{batched ? kiln::baddbmm(in[0], in[1], in[2], beta, alpha)
                                         : kiln::addmm(in[0], in[1], in[2], beta, alpha)};
            },
            [batched, beta, alpha, dt](const std::vector<RefTensor>& in) {
              RefTensor prod = batched ? ref_einsum({in[1], in[2]}, {"bij", "bjk"}, "bik", dt)
                                       : ref_einsum({in[1], in[2]}, {"ij", "jk"}, "ik", dt);
              const RefTensor& base = in[0];
              return std::vector{ref_from_index(prod.sizes, dt, [&](const Index& idx) {
                double p = alpha * prod.at(idx);
                if (beta == 0) return round_to(p, dt);
                double s = base.data[static_cast<size_t>(broadcast_source(idx, base.sizes))];
                return round_to(beta * s + p, dt);
              })};
            }));
        seed += 2;
        if (dt == kiln::kFloat32) out.back().atol = 1e-5;
      }
    }
    // Integers take the multiply-and-sum path instead of bmm.
    for (DType dt : {kiln::kInt64, kiln::kInt32}) {
      for (size_t i : {0, 4, 6, 12, 16, 21, 25}) {
        const EinsumCase& c = einsum_cases()[i];
        std::vector<Tensor> inputs;
        for (const Shape& s : c.shapes)
          inputs.push_back(make_input(s, dt, c.layout, -4, 4, seed++));
        std::string eq = c.equation;
        out.push_back(make_sample(
            fmt::format("{}_'{}'_{}", kiln::dtype_name(dt), eq, layout_name(c.layout)), inputs,
            [eq](const std::vector<Tensor>& in) { return std::vector{kiln::einsum(eq, in)}; },
            [c, dt](const std::vector<RefTensor>& in) {
              return std::vector{ref_einsum(in, c.ref_terms, c.ref_out, dt)};
            }));
      }
    }
    return out;
  };
  return info;
}

KILN_REGISTER_OPINFO(addmm_info, add_product_info("addmm", false));
KILN_REGISTER_OPINFO(baddbmm_info, add_product_info("baddbmm", true));

}  // namespace
}  // namespace kiln_test
