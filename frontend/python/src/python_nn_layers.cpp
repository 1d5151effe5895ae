// kiln._C._nn's convolution, normalization, pooling and attention functions
// (runtime/api/conv_ops.h, norm_ops.h, pooling_ops.h, attention_ops.h), called by
// kiln.nn.functional under torch's names and defaults.
#include <nanobind/stl/pair.h>

#include <string_view>

#include "kiln/runtime/api/ops.h"
#include "python_common.h"

namespace kiln::python {
namespace {

struct SiteThenRelease {
  PythonCallSite site;
  nb::gil_scoped_release release;
};

Tensor or_undefined(const std::optional<Tensor>& t) {
  return t.value_or(Tensor());
}

// torch's padding argument: a string, or numbers (already a list here).
ConvPadding conv_padding(nb::handle padding) {
  if (nb::isinstance<nb::str>(padding)) return ConvPadding(nb::cast<std::string>(padding));
  return ConvPadding(nb::cast<Shape>(padding));
}

}  // namespace

void bind_nn_layers(nb::module_& m) {
  nb::module_ nn = nb::borrow<nb::module_>(m.attr("_nn"));
  auto nogil = nb::call_guard<SiteThenRelease>();
  for (const char* name : {"conv2d", "conv1d"}) {
    bool two_d = std::string_view(name) == "conv2d";
    nn.def(
        name,
        [two_d](const Tensor& x, const Tensor& w, std::optional<Tensor> b, Shape stride,
                nb::handle padding, Shape dilation, int64_t groups) {
          // The padding object is read with the GIL, then the call runs without it.
          ConvPadding p = conv_padding(padding);
          PythonCallSite site;
          nb::gil_scoped_release release;
          auto conv = two_d ? &conv2d : &conv1d;
          return conv(x, w, or_undefined(b), std::move(stride), std::move(p), std::move(dilation),
                      groups, std::source_location::current());
        },
        nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("stride"),
        nb::arg("padding"), nb::arg("dilation"), nb::arg("groups"));
  }
  nn.def(
      "conv_transpose2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, Shape stride, Shape padding,
         Shape output_padding, int64_t groups, Shape dilation) {
        return conv_transpose2d(x, w, or_undefined(b), std::move(stride), std::move(padding),
                                std::move(output_padding), groups, std::move(dilation));
      },
      nogil, nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("stride"),
      nb::arg("padding"), nb::arg("output_padding"), nb::arg("groups"), nb::arg("dilation"));
  nn.def(
      "batch_norm",
      [](const Tensor& x, std::optional<Tensor> rm, std::optional<Tensor> rv,
         std::optional<Tensor> w, std::optional<Tensor> b, bool training, double momentum,
         double eps) {
        return batch_norm(x, or_undefined(rm), or_undefined(rv), or_undefined(w), or_undefined(b),
                          training, momentum, eps);
      },
      nogil, nb::arg("input"), nb::arg("running_mean").none(), nb::arg("running_var").none(),
      nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("training"), nb::arg("momentum"),
      nb::arg("eps"));
  nn.def(
      "group_norm",
      [](const Tensor& x, int64_t groups, std::optional<Tensor> w, std::optional<Tensor> b,
         double eps) { return group_norm(x, groups, or_undefined(w), or_undefined(b), eps); },
      nogil, nb::arg("input"), nb::arg("num_groups"), nb::arg("weight").none(),
      nb::arg("bias").none(), nb::arg("eps"));
  nn.def(
      "rms_norm",
      [](const Tensor& x, Shape shape, std::optional<Tensor> w, std::optional<double> eps) {
        return rms_norm(x, std::move(shape), or_undefined(w), eps);
      },
      nogil, nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight").none(),
      nb::arg("eps").none());
  nn.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> mask,
         double dropout_p, bool is_causal, std::optional<double> scale) {
        return scaled_dot_product_attention(q, k, v, or_undefined(mask), dropout_p, is_causal,
                                            scale);
      },
      nogil, nb::arg("query"), nb::arg("key"), nb::arg("value"), nb::arg("attn_mask").none(),
      nb::arg("dropout_p"), nb::arg("is_causal"), nb::arg("scale").none());
  nn.def(
      "avg_pool2d",
      [](const Tensor& x, Shape kernel, Shape stride, Shape padding, bool ceil_mode,
         bool count_include_pad, std::optional<int64_t> divisor) {
        return avg_pool2d(x, std::move(kernel), std::move(stride), std::move(padding), ceil_mode,
                          count_include_pad, divisor);
      },
      nogil, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride"), nb::arg("padding"),
      nb::arg("ceil_mode"), nb::arg("count_include_pad"), nb::arg("divisor_override").none());
  nn.def(
      "adaptive_avg_pool2d",
      [](const Tensor& x, Shape out) { return adaptive_avg_pool2d(x, std::move(out)); }, nogil,
      nb::arg("input"), nb::arg("output_size"));
  nn.def(
      "max_pool2d_with_indices",
      [](const Tensor& x, Shape kernel, Shape stride, Shape padding, Shape dilation,
         bool ceil_mode) {
        auto [values, indices] =
            max_pool2d_with_indices(x, std::move(kernel), std::move(stride), std::move(padding),
                                    std::move(dilation), ceil_mode);
        return std::make_pair(values, indices);
      },
      nogil, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride"), nb::arg("padding"),
      nb::arg("dilation"), nb::arg("ceil_mode"));
}

}  // namespace kiln::python
