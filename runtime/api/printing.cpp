// operator<< for tensors in libtorch's layout: a 0-dim tensor prints its value; 1-D and 2-D
// tensors print as columns of aligned numbers; higher dims print one matrix per leading index
// as "(i,j,.,.) =". The last line names the backend, type and sizes: "[ CPUFloatType{2,3} ]".
#include <cmath>
#include <ostream>
#include <sstream>

#include "kiln/runtime/tensor.h"
#include "kiln/runtime/tensor_data.h"

namespace kiln {
namespace {

const char* type_name(DType t) {
  switch (t) {
    case kBool:
      return "Bool";
    case kUInt8:
      return "Byte";
    case kInt8:
      return "Char";
    case kInt16:
      return "Short";
    case kInt32:
      return "Int";
    case kInt64:
      return "Long";
    case kFloat16:
      return "Half";
    case kBFloat16:
      return "BFloat16";
    case kFloat32:
      return "Float";
    case kFloat64:
      return "Double";
  }
  return "?";
}

std::string backend_name(Device d) {
  return d.is_cpu() ? "CPU" : d.is_cuda() ? "CUDA" : "Meta";
}

// Every element as text, in one format so that columns line up: integers exactly, floats with
// four decimals, or in scientific notation when magnitudes make fixed point unreadable.
std::vector<std::string> element_strings(const Tensor& t) {
  std::vector<std::string> out;
  if (!is_floating(t.dtype())) {
    for (int64_t v : t.to_vector<int64_t>())
      out.push_back(fmt::format("{}", v));
    return out;
  }
  std::vector<double> values = t.to_vector<double>();
  double max_abs = 0, min_abs = INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    max_abs = std::max(max_abs, std::abs(v));
    if (v != 0) min_abs = std::min(min_abs, std::abs(v));
  }
  bool scientific = max_abs >= 1e5 || (min_abs < 1e-4 && max_abs > 0);
  for (double v : values) {
    if (std::isnan(v)) {
      out.emplace_back("nan");
    } else if (std::isinf(v)) {
      out.emplace_back(v > 0 ? "inf" : "-inf");
    } else {
      out.push_back(scientific ? fmt::format("{:.4e}", v) : fmt::format("{:.4f}", v));
    }
  }
  return out;
}

void print_matrix(std::ostream& os, const std::vector<std::string>& v, size_t width, size_t base,
                  int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const std::string& s = v[base + static_cast<size_t>(r * cols + c)];
      os << std::string(width + 1 - s.size(), ' ') << s;
      if (c + 1 < cols) os << ' ';
    }
    os << '\n';
  }
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  std::string tag = fmt::format("[ {}{}Type{{{}}} ]", backend_name(t.device()),
                                type_name(t.dtype()), fmt::join(t.sizes(), ","));
  if (t.device().is_meta()) return os << "<meta tensor, no data>\n" << tag;
  std::vector<std::string> v = element_strings(t);
  size_t width = 1;
  for (const std::string& s : v)
    width = std::max(width, s.size());
  if (t.dim() == 0) return os << v[0] << "\n" << tag;
  if (t.dim() == 1) {
    print_matrix(os, v, width, 0, t.size(0), 1);
  } else {
    int64_t rows = t.size(-2), cols = t.size(-1);
    int64_t matrices = rows * cols == 0 ? 0 : t.numel() / (rows * cols);
    for (int64_t m = 0; m < matrices; ++m) {
      if (t.dim() > 2) {
        // The leading index of this matrix, as "(0,1,.,.) =".
        std::vector<std::string> idx;
        int64_t rest = m;
        for (int64_t d = t.dim() - 3; d >= 0; --d) {
          idx.insert(idx.begin(), std::to_string(rest % t.size(d)));
          rest /= t.size(d);
        }
        os << "(" << fmt::format("{}", fmt::join(idx, ",")) << ",.,.) = \n";
      }
      print_matrix(os, v, width, static_cast<size_t>(m * rows * cols), rows, cols);
      if (t.dim() > 2 && m + 1 < matrices) os << '\n';
    }
  }
  return os << tag;
}

}  // namespace kiln
