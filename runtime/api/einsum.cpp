// torch.einsum as a composite: each operand's repeated subscripts become a diagonal (an
// index_select over the merged dims), subscripts needed nowhere else are summed, and the
// operands are contracted left to right, each pair as one bmm over [batch, left, contracted] x
// [batch, contracted, right] (integers, which BLAS does not take, multiply and sum instead).
// Everything is a table op, so autograd, tracing and CUDA follow. The result keeps the
// operands' dtype, also int32 where torch's internal sums widen it to int64.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "kiln/base/call_site.h"
#include "kiln/runtime/api/factories.h"
#include "kiln/runtime/api/indexing_ops.h"
#include "kiln/runtime/api/linalg_ops.h"
#include "kiln/runtime/api/pointwise_ops.h"
#include "kiln/runtime/api/reduction_ops.h"

namespace kiln {

namespace {

// Labels: 'A'-'Z' are 0-25 and 'a'-'z' 26-51 (so sorting labels sorts subscripts as torch's
// implicit output does); the dims an ellipsis covers are kEllipsis + k, right-aligned across
// operands as broadcasting aligns them.
constexpr int kLetters = 52;
constexpr int kEllipsis = kLetters;

struct Term {
  std::vector<int> letters;  // the subscripts, without the ellipsis
  int64_t ellipsis_at = -1;  // index into letters where "..." stands, or -1
};

std::string label_name(int label) {
  if (label >= kEllipsis) return "...";
  return std::string(1, static_cast<char>(label < 26 ? 'A' + label : 'a' + (label - 26)));
}

Term parse_term(const std::string& eq, size_t begin, size_t end) {
  Term t;
  for (size_t i = begin; i < end; ++i) {
    char c = eq[i];
    if (c == ' ') continue;
    if (c == '.') {
      KILN_CHECK(i + 3 <= end && eq.compare(i, 3, "...") == 0,
                 "einsum(): found '.' for operand that is not part of any ellipsis in the "
                 "equation '{}'",
                 eq);
      KILN_CHECK(t.ellipsis_at < 0,
                 "einsum(): found more than one ellipsis ('...') in one operand of the equation "
                 "'{}'",
                 eq);
      t.ellipsis_at = static_cast<int64_t>(t.letters.size());
      i += 2;
      continue;
    }
    bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    KILN_CHECK(upper || lower,
               "einsum(): invalid subscript given at index {} in the equation string '{}', "
               "subscripts must be in [a-zA-Z]",
               i, eq);
    t.letters.push_back(upper ? c - 'A' : 26 + (c - 'a'));
  }
  return t;
}

// The labels of each dim, with `e` ellipsis dims out of `max_e`.
std::vector<int> expand_term(const Term& t, int64_t e, int64_t max_e) {
  std::vector<int> labels;
  for (size_t i = 0; i <= t.letters.size(); ++i) {
    if (static_cast<int64_t>(i) == t.ellipsis_at) {
      for (int64_t k = 0; k < e; ++k)
        labels.push_back(kEllipsis + static_cast<int>(max_e - e + k));
    }
    if (i < t.letters.size()) labels.push_back(t.letters[i]);
  }
  return labels;
}

struct Operand {
  Tensor t;
  std::vector<int> labels;  // one per dim
};

int64_t position(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) - labels.begin();
}
bool has(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// Replaces the first pair of dims sharing a label by their diagonal, until no label repeats.
void take_diagonals(Operand& op, size_t index, const std::string& eq) {
  for (;;) {
    int64_t p = -1, q = -1;
    for (size_t i = 0; i < op.labels.size() && p < 0; ++i) {
      for (size_t j = i + 1; j < op.labels.size(); ++j) {
        if (op.labels[i] == op.labels[j]) {
          p = static_cast<int64_t>(i);
          q = static_cast<int64_t>(j);
          break;
        }
      }
    }
    if (p < 0) return;
    // Compared as expressions first, so that a symbolic size is not read (Note [Size reads
    // while tracing]).
    SymInt n = op.t.sym_size(p);
    KILN_CHECK(n == op.t.sym_size(q) || op.t.size(p) == op.t.size(q),
               "einsum(): subscript {} is repeated for operand {} but the sizes don't match, {} "
               "!= {} (equation '{}', operand shape {})",
               label_name(op.labels[static_cast<size_t>(p)]), index, op.t.size(p), op.t.size(q), eq,
               shape_str(op.t.sizes()));
    Shape perm;
    std::vector<int> labels;
    for (int64_t d = 0; d < op.t.dim(); ++d) {
      if (d == p || d == q) continue;
      perm.push_back(d);
      labels.push_back(op.labels[static_cast<size_t>(d)]);
    }
    labels.push_back(op.labels[static_cast<size_t>(p)]);
    perm.insert(perm.end(), {p, q});
    SymShape merged(static_cast<size_t>(op.t.dim() - 1));
    for (size_t i = 0; i + 2 < perm.size(); ++i)
      merged[i] = op.t.sym_size(perm[i]);
    merged.back() = n * n;
    // Element (i, i) of the merged last dim is at i * (n + 1).
    TensorOptions io = TensorOptions(kInt64).device(op.t.device());
    Tensor diag_index = mul(arange_symint(n, io), scalar_tensor_symint(n + 1, io));
    op.t = index_select(op.t.permute(perm).reshape_symint(std::move(merged)), -1, diag_index);
    op.labels = std::move(labels);
  }
}

// Sums the dims whose labels `keep` rejects.
void sum_unneeded(Operand& op, const std::function<bool(int)>& keep) {
  Shape dims;
  std::vector<int> kept;
  for (size_t d = 0; d < op.labels.size(); ++d) {
    if (keep(op.labels[d])) {
      kept.push_back(op.labels[d]);
    } else {
      dims.push_back(static_cast<int64_t>(d));
    }
  }
  if (dims.empty()) return;
  op.t = sum(op.t, dims).to(op.t.dtype());  // integer sums widen to int64; torch's keep the dtype
  op.labels = std::move(kept);
}

// a and b over their shared labels: batch labels are kept, contracted ones summed by bmm.
Operand contract(const Operand& a, const Operand& b, const std::function<bool(int)>& needed) {
  std::vector<int> batch, left, contracted, right;
  for (int l : a.labels) {
    if (!has(b.labels, l)) {
      left.push_back(l);
    } else {
      (needed(l) ? batch : contracted).push_back(l);
    }
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) right.push_back(l);
  // Sizes as SymInts, so that a symbolic trace keeps them (a symbol is never 1).
  auto size_of = [&](int l) {
    SymInt sa = has(a.labels, l) ? a.t.sym_size(position(a.labels, l)) : SymInt(1);
    SymInt sb = has(b.labels, l) ? b.t.sym_size(position(b.labels, l)) : SymInt(1);
    return sa == 1 ? sb : sa;  // size 1 broadcasts, also against 0
  };
  // One operand's dims in the order of `groups`, size-1 dims broadcast, merged per group.
  auto arrange = [&](const Operand& op, std::initializer_list<const std::vector<int>*> groups) {
    Shape perm;
    SymShape full_sizes, merged;
    for (const std::vector<int>* g : groups) {
      SymInt prod = 1;
      for (int l : *g) {
        perm.push_back(position(op.labels, l));
        full_sizes.push_back(size_of(l));
        prod *= size_of(l);
      }
      merged.push_back(prod);
    }
    return op.t.permute(perm)
        .expand_symint(std::move(full_sizes))
        .reshape_symint(std::move(merged));
  };
  Tensor lhs = arrange(a, {&batch, &left, &contracted});
  Tensor rhs = arrange(b, {&batch, &contracted, &right});
  // The products are floating only (BLAS); integers multiply [B, L, K, 1] by [B, 1, K, R]
  // and sum over K, back in their dtype (sum widens to int64).
  Tensor product = is_floating(lhs.dtype())
                       ? bmm(lhs, rhs)
                       : sum(mul(lhs.unsqueeze(3), rhs.unsqueeze(1)), {2}).to(lhs.dtype());
  Operand out;
  SymShape sizes;
  for (const std::vector<int>* g : {&batch, &left, &right}) {
    for (int l : *g) {
      out.labels.push_back(l);
      sizes.push_back(size_of(l));
    }
  }
  out.t = product.view_symint(std::move(sizes));
  return out;
}

// The output's labels: after "->" as written (checked), or implicitly the ellipsis dims, then
// the subscripts used exactly once, sorted.
std::vector<int> output_labels(const std::string& equation, size_t arrow,
                               const std::vector<int>& count, int64_t max_e) {
  std::vector<int> output;
  if (arrow == std::string::npos) {
    for (int64_t k = 0; k < max_e; ++k)
      output.push_back(kEllipsis + static_cast<int>(k));
    for (int l = 0; l < kLetters; ++l)
      if (count[static_cast<size_t>(l)] == 1) output.push_back(l);
    return output;
  }
  Term out = parse_term(equation, arrow + 2, equation.size());
  for (int l : out.letters) {
    KILN_CHECK(count[static_cast<size_t>(l)] > 0,
               "einsum(): output subscript {} does not appear in the equation for any input "
               "operand (equation '{}')",
               label_name(l), equation);
    KILN_CHECK(std::count(out.letters.begin(), out.letters.end(), l) == 1,
               "einsum(): output subscript {} appears more than once in the output (equation "
               "'{}')",
               label_name(l), equation);
  }
  return expand_term(out, out.ellipsis_at < 0 ? 0 : max_e, max_e);
}

// Every operand's size of a label must equal the others' or be 1 (broadcast).
void check_sizes(const std::string& equation, const std::vector<Tensor>& operands,
                 const std::vector<Operand>& ops, size_t nlabels) {
  // SymInts compared as expressions first, so that a symbolic trace keeps equal sizes symbolic;
  // only sizes that differ as expressions are compared as integers (which specializes them).
  std::vector<SymInt> label_size(nlabels, 1);
  std::vector<size_t> label_from(nlabels, 0);
  std::vector<int64_t> label_dim(nlabels, 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    for (size_t d = 0; d < ops[i].labels.size(); ++d) {
      auto l = static_cast<size_t>(ops[i].labels[d]);
      SymInt s = operands[i].sym_size(static_cast<int64_t>(d));
      // A subscript repeated within one operand is a diagonal, checked by take_diagonals.
      if (s == 1 || (!(label_size[l] == 1) && label_from[l] == i)) continue;
      bool same =
          label_size[l] == 1 || label_size[l] == s ||
          operands[label_from[l]].size(label_dim[l]) == operands[i].size(static_cast<int64_t>(d));
      KILN_CHECK(same,
                 "einsum(): operands do not broadcast: subscript {} has size {} in operand {} "
                 "(shape {}) and size {} in operand {} (shape {}) (equation '{}')",
                 label_name(static_cast<int>(l)), label_size[l], label_from[l],
                 shape_str(operands[label_from[l]].sizes()), s, i, shape_str(operands[i].sizes()),
                 equation);
      label_size[l] = s;
      label_from[l] = i;
      label_dim[l] = static_cast<int64_t>(d);
    }
  }
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands,
              std::source_location loc) {
  CallSiteScope site(loc);
  KILN_CHECK(!operands.empty(), "einsum(): must provide at least one operand (equation '{}')",
             equation);
  for (size_t i = 1; i < operands.size(); ++i) {
    KILN_CHECK(operands[i].dtype() == operands[0].dtype(),
               "einsum(): expected all operands to have the same dtype, but operand 0 is {} and "
               "operand {} is {} (equation '{}')",
               operands[0].dtype(), i, operands[i].dtype(), equation);
  }
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t begin = 0;;) {
    size_t comma = lhs.find(',', begin);
    size_t end = comma == std::string::npos ? lhs.size() : comma;
    terms.push_back(parse_term(equation, begin, end));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  KILN_CHECK(terms.size() <= operands.size(),
             "einsum(): fewer operands were provided than specified in the equation '{}' ({} "
             "operands for {} subscript terms)",
             equation, operands.size(), terms.size());
  KILN_CHECK(terms.size() >= operands.size(),
             "einsum(): more operands were provided than specified in the equation '{}' ({} "
             "operands for {} subscript terms)",
             equation, operands.size(), terms.size());

  std::vector<int64_t> ellipsis_dims(terms.size(), 0);
  int64_t max_e = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto nletters = static_cast<int64_t>(terms[i].letters.size());
    int64_t ndim = operands[i].dim();
    if (terms[i].ellipsis_at < 0) {
      KILN_CHECK(nletters == ndim,
                 "einsum(): the number of subscripts in the equation ({}) does not match the "
                 "number of dimensions ({}) for operand {} (shape {}) and no ellipsis was given "
                 "(equation '{}')",
                 nletters, ndim, i, shape_str(operands[i].sizes()), equation);
    } else {
      KILN_CHECK(nletters <= ndim,
                 "einsum(): the number of subscripts in the equation ({}) is more than the number "
                 "of dimensions ({}) for operand {} (shape {}) (equation '{}')",
                 nletters, ndim, i, shape_str(operands[i].sizes()), equation);
      ellipsis_dims[i] = ndim - nletters;
    }
    max_e = std::max(max_e, ellipsis_dims[i]);
  }
  std::vector<Operand> ops;
  std::vector<int> count(static_cast<size_t>(kLetters + max_e), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    ops.push_back({operands[i], expand_term(terms[i], ellipsis_dims[i], max_e)});
    for (int l : ops.back().labels)
      ++count[static_cast<size_t>(l)];
  }

  std::vector<int> output = output_labels(equation, arrow, count, max_e);

  check_sizes(equation, operands, ops, count.size());

  // A label is needed after operand k while the output or a later operand has it.
  auto needed_after = [&](size_t k) {
    return [&, k](int l) {
      if (has(output, l)) return true;
      for (size_t j = k + 1; j < ops.size(); ++j)
        if (has(ops[j].labels, l)) return true;
      return false;
    };
  };
  for (size_t i = 0; i < ops.size(); ++i)
    take_diagonals(ops[i], i, equation);
  Operand acc = ops[0];
  sum_unneeded(acc, needed_after(0));
  for (size_t k = 1; k < ops.size(); ++k) {
    auto needed = needed_after(k);
    Operand b = ops[k];
    // Labels of one side only and needed nowhere later are summed before the product.
    sum_unneeded(b, [&](int l) { return needed(l) || has(acc.labels, l); });
    sum_unneeded(acc, [&](int l) { return needed(l) || has(b.labels, l); });
    acc = contract(acc, b, needed);
  }
  sum_unneeded(acc, [&](int l) { return has(output, l); });
  Shape perm;
  for (int l : output)
    perm.push_back(position(acc.labels, l));
  return acc.t.permute(perm);
}

}  // namespace kiln
