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

// One format for every element so that columns line up: integers plainly, floats with four
// decimals, or in scientific notation when magnitudes make fixed point unreadable.
struct ElementFormat {
  bool integral = false;
  bool scientific = false;
  int width = 1;

  std::string str(double v) const {
    if (integral) return fmt::format("{}", static_cast<int64_t>(v));
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return scientific ? fmt::format("{:.4e}", v) : fmt::format("{:.4f}", v);
  }
};

ElementFormat choose_format(const std::vector<double>& values, DType dtype) {
  ElementFormat f;
  f.integral = !is_floating(dtype);
  double max_abs = 0, min_abs = INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    max_abs = std::max(max_abs, std::abs(v));
    if (v != 0) min_abs = std::min(min_abs, std::abs(v));
  }
  f.scientific = !f.integral && (max_abs >= 1e5 || (min_abs < 1e-4 && max_abs > 0));
  for (double v : values)
    f.width = std::max(f.width, static_cast<int>(f.str(v).size()));
  return f;
}

void print_matrix(std::ostream& os, const std::vector<double>& v, size_t base, int64_t rows,
                  int64_t cols, const ElementFormat& f) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::string s = f.str(v[base + static_cast<size_t>(r * cols + c)]);
      os << std::string(static_cast<size_t>(f.width + 1) - s.size(), ' ') << s;
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
  std::vector<double> v = t.to_vector<double>();
  ElementFormat f = choose_format(v, t.dtype());
  if (t.dim() == 0) return os << f.str(v[0]) << "\n" << tag;
  if (t.dim() == 1) {
    print_matrix(os, v, 0, t.size(0), 1, f);
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
      print_matrix(os, v, static_cast<size_t>(m * rows * cols), rows, cols, f);
      if (t.dim() > 2 && m + 1 < matrices) os << '\n';
    }
  }
  return os << tag;
}

}  // namespace kiln
