// The CPU kernels of convolution and convolution_backward: im2col + GEMM per image through the
// BLAS (runtime/blas.h), channels-first and contiguous (Note [Convolution on the CPU]).
//
// Note [Convolution on the CPU]
// Each image of the batch runs three kinds of products (Note [Convolution image and columns] in
// conv_geometry.h), each one GEMM per group over a column buffer of [C_image/G * kH * kW,
// positions]:
//   gather:  columns[G*M, P]  = W_g[M, K] @ im2col(image)_g[K, P]
//   scatter: image           = col2im(W_g^T[K, M] @ columns_g[M, P])
//   weight:  dW_g[M, K]     += columns_g[M, P] @ im2col(image)_g^T[P, K]
// A convolution's forward is gather, its input gradient scatter; a transposed convolution's are
// the other way round, and both weight gradients are `weight` with the roles of the input and
// the output gradient swapped. A 1x1 window at stride 1 without padding (ConvGeometry::pointwise)
// reads the image as its own columns, so its products are plain GEMMs on the tensors.
// The images run one after another, each GEMM on OpenBLAS's threads and im2col/col2im on Kiln's
// pool. Images in parallel on Kiln's pool with single-threaded GEMMs is the alternative still
// to be measured (it needs OpenBLAS held to one thread per call).
// float16/bfloat16 compute in float32 and round once at the end, as the matmul kernel.
#include <algorithm>
#include <cstring>

#include "kiln/base/thread_pool.h"
#include "kiln/runtime/blas.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/conv_cpu.h"
#include "kiln/runtime/kernels/copy_kernels.h"

namespace kiln {
namespace {

constexpr int64_t kColumnGrain = 4096;  // elements per parallel_for chunk of im2col/col2im

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    blas::sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  } else {
    blas::dgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
  }
}

// cols[(c * kH + a) * kW + b][y * CW + x] = image[c][y * sH - pH + a * dH][x * sW - pW + b * dW],
// zero where that falls in the padding.
template <class T>
void im2col(const ConvGeometry& g, const T* image, T* cols) {
  const int64_t h = g.image(0), w = g.image(1), ch = g.columns(0), cw = g.columns(1);
  const int64_t kh = g.kernel[0], kw = g.kernel[1];
  const int64_t rows = g.image_channels() * kh * kw;
  int64_t grain = std::max<int64_t>(1, kColumnGrain / std::max<int64_t>(1, ch * cw));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t c = row / (kh * kw), a = row / kw % kh, b = row % kw;
      const T* plane = image + c * h * w;
      T* dst = cols + row * ch * cw;
      int64_t off = b * g.dilation[1] - g.padding[1];  // image column of x = 0
      for (int64_t y = 0; y < ch; ++y, dst += cw) {
        int64_t r = y * g.stride[0] - g.padding[0] + a * g.dilation[0];
        if (r < 0 || r >= h) {
          std::fill(dst, dst + cw, T(0));
          continue;
        }
        const T* src = plane + r * w;
        if (g.stride[1] == 1) {
          // Valid x: 0 <= x + off < w.
          int64_t lo = std::clamp<int64_t>(-off, 0, cw), hi = std::clamp<int64_t>(w - off, lo, cw);
          std::fill(dst, dst + lo, T(0));
          std::memcpy(dst + lo, src + lo + off, static_cast<size_t>(hi - lo) * sizeof(T));
          std::fill(dst + hi, dst + cw, T(0));
        } else {
          for (int64_t x = 0; x < cw; ++x) {
            int64_t s = x * g.stride[1] + off;
            dst[x] = s >= 0 && s < w ? src[s] : T(0);
          }
        }
      }
    }
  });
}

// image = the sum of every column entry at the image position it was read from (im2col's
// adjoint). Each channel's plane is written by its own kH * kW rows only, so channels run in
// parallel.
template <class T>
void col2im(const ConvGeometry& g, const T* cols, T* image) {
  const int64_t h = g.image(0), w = g.image(1), ch = g.columns(0), cw = g.columns(1);
  const int64_t kh = g.kernel[0], kw = g.kernel[1];
  int64_t grain = std::max<int64_t>(1, kColumnGrain / std::max<int64_t>(1, kh * kw * ch * cw));
  parallel_for(0, g.image_channels(), grain, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      T* plane = image + c * h * w;
      std::fill(plane, plane + h * w, T(0));
      for (int64_t a = 0; a < kh; ++a) {
        for (int64_t b = 0; b < kw; ++b) {
          const T* src = cols + ((c * kh + a) * kw + b) * ch * cw;
          int64_t off = b * g.dilation[1] - g.padding[1];
          for (int64_t y = 0; y < ch; ++y, src += cw) {
            int64_t r = y * g.stride[0] - g.padding[0] + a * g.dilation[0];
            if (r < 0 || r >= h) continue;
            T* dst = plane + r * w;
            if (g.stride[1] == 1) {
              // Valid x: 0 <= x + off < w, a contiguous run the compiler vectorizes.
              int64_t lo = std::clamp<int64_t>(-off, 0, cw);
              int64_t hi = std::clamp<int64_t>(w - off, lo, cw);
              for (int64_t x = lo; x < hi; ++x)
                dst[x + off] += src[x];
              continue;
            }
            for (int64_t x = 0; x < cw; ++x) {
              int64_t s = x * g.stride[1] + off;
              if (s >= 0 && s < w) dst[s] += src[x];
            }
          }
        }
      }
    }
  });
}

// The per-image products of Note [Convolution on the CPU] over one batch. `columns` and `image`
// are the batch's contiguous tensors on the two grids; the weight is [G, M, K].
template <class T>
class ImageProducts {
 public:
  ImageProducts(const ConvGeometry& g, const T* weight) : g_(g), weight_(weight) {
    groups_ = g.groups;
    m_ = g.column_channels() / groups_;
    k_ = g.image_channels() / groups_ * g.kernel_size();
    p_ = g.columns(0) * g.columns(1);
    image_numel_ = g.image_channels() * g.image(0) * g.image(1);
    if (!g.pointwise()) buffer_.resize(static_cast<size_t>(groups_ * k_ * p_));
  }

  void gather(const T* image, T* columns) {
    for (int64_t i = 0; i < g_.n; ++i) {
      const T* cols = columns_of(image + i * image_numel_);
      for (int64_t j = 0; j < groups_; ++j)
        gemm<T>(false, false, m_, p_, k_, weight_ + j * m_ * k_, k_, cols + j * k_ * p_, p_, T(0),
                columns + (i * groups_ + j) * m_ * p_, p_);
    }
  }

  void scatter(const T* columns, T* image) {
    for (int64_t i = 0; i < g_.n; ++i) {
      T* img = image + i * image_numel_;
      T* cols = g_.pointwise() ? img : buffer_.data();
      for (int64_t j = 0; j < groups_; ++j)
        gemm<T>(true, false, k_, p_, m_, weight_ + j * m_ * k_, k_,
                columns + (i * groups_ + j) * m_ * p_, p_, T(0), cols + j * k_ * p_, p_);
      if (!g_.pointwise()) col2im(g_, cols, img);
    }
  }

  // grad_weight [G, M, K] = the sum over images.
  void weight(const T* columns, const T* image, T* grad_weight) {
    for (int64_t i = 0; i < g_.n; ++i) {
      const T* cols = columns_of(image + i * image_numel_);
      for (int64_t j = 0; j < groups_; ++j)
        gemm<T>(false, true, m_, k_, p_, columns + (i * groups_ + j) * m_ * p_, p_,
                cols + j * k_ * p_, p_, i == 0 ? T(0) : T(1), grad_weight + j * m_ * k_, k_);
    }
  }

 private:
  const T* columns_of(const T* image) {
    if (g_.pointwise()) return image;
    im2col(g_, image, buffer_.data());
    return buffer_.data();
  }

  const ConvGeometry& g_;
  const T* weight_;
  int64_t groups_, m_, k_, p_, image_numel_;
  std::vector<T> buffer_;  // one image's columns
};

// Contiguous in the compute dtype (float32 for the 16-bit types).
Tensor prepared(const Tensor& t, DType compute) {
  return (t.dtype() == compute ? t : t.to(compute)).contiguous();
}

DType compute_dtype(DType t) {
  return t == kFloat64 ? kFloat64 : kFloat32;
}

// A buffer for `out` in the compute dtype: `out` itself where it already is one.
Tensor result_buffer(const Tensor& out, DType compute) {
  return out.dtype() == compute ? out : empty_tensor(out.sizes(), compute, out.device());
}

template <class Fn>
void with_float(DType compute, Fn&& fn) {
  if (compute == kFloat64) {
    fn.template operator()<double>();
  } else {
    fn.template operator()<float>();
  }
}

// out[n][c][...] += bias[c] over the output (columns grid, or the image when transposed).
template <class T>
void add_bias(const ConvGeometry& g, const T* bias, T* out) {
  int64_t c = g.out_channels, positions = g.out[0] * g.out[1];
  parallel_for(0, g.n * c, std::max<int64_t>(1, kColumnGrain / positions),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i) {
                   T v = bias[i % c];
                   T* p = out + i * positions;
                   for (int64_t j = 0; j < positions; ++j)
                     p[j] += v;
                 }
               });
}

// grad_bias[c] = the sum of grad_output[n][c][...] over images and positions, in double.
template <class T>
void sum_bias(const ConvGeometry& g, const T* grad_output, T* grad_bias) {
  int64_t c = g.out_channels, positions = g.out[0] * g.out[1];
  parallel_for(0, c, 1, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < g.n; ++i) {
        const T* p = grad_output + (i * c + o) * positions;
        for (int64_t j = 0; j < positions; ++j)
          acc += p[j];
      }
      grad_bias[o] = static_cast<T>(acc);
    }
  });
}

}  // namespace

void conv_forward_cpu(const ConvGeometry& g, const Tensor& input, const Tensor& weight,
                      const Tensor& bias, const Tensor& out) {
  DType compute = compute_dtype(out.dtype());
  Tensor res = result_buffer(out, compute);
  if (res.numel() > 0) {
    if (input.numel() == 0 || weight.numel() == 0) {
      fill_into(res, 0);  // no channels (or no window): an empty sum
    } else {
      Tensor x = prepared(input, compute), w = prepared(weight, compute);
      park_workers();  // OpenBLAS's threads need the cores Kiln's workers would spin on
      with_float(compute, [&]<class T>() {
        ImageProducts<T> products(g, w.data_ptr<T>());
        if (g.transposed) {
          products.scatter(x.data_ptr<T>(), res.data_ptr<T>());
        } else {
          products.gather(x.data_ptr<T>(), res.data_ptr<T>());
        }
      });
    }
    if (bias.defined()) {
      Tensor b = prepared(bias, compute);
      with_float(compute, [&]<class T>() { add_bias<T>(g, b.data_ptr<T>(), res.data_ptr<T>()); });
    }
  }
  if (!res.is_same(out)) copy_into(out, res);
}

void conv_backward_cpu(const ConvGeometry& g, const Tensor& grad_output, const Tensor& input,
                       const Tensor& weight, const Tensor& grad_input, const Tensor& grad_weight,
                       const Tensor& grad_bias) {
  DType compute = compute_dtype(input.dtype());
  Tensor gi = grad_input.defined() ? result_buffer(grad_input, compute) : Tensor();
  Tensor gw = grad_weight.defined() ? result_buffer(grad_weight, compute) : Tensor();
  Tensor go = prepared(grad_output, compute);
  bool empty = go.numel() == 0 || input.numel() == 0 || weight.numel() == 0;
  if (empty) {
    if (gi.defined()) fill_into(gi, 0);
    if (gw.defined()) fill_into(gw, 0);
  } else if (gi.defined() || gw.defined()) {
    Tensor x = prepared(input, compute), w = prepared(weight, compute);
    park_workers();
    with_float(compute, [&]<class T>() {
      ImageProducts<T> products(g, w.data_ptr<T>());
      // The columns grid holds the output of a convolution and the input of a transposed one.
      const T* columns = g.transposed ? x.data_ptr<T>() : go.data_ptr<T>();
      const T* image = g.transposed ? go.data_ptr<T>() : x.data_ptr<T>();
      if (gi.defined()) {
        if (g.transposed) {
          products.gather(go.data_ptr<T>(), gi.data_ptr<T>());
        } else {
          products.scatter(go.data_ptr<T>(), gi.data_ptr<T>());
        }
      }
      if (gw.defined()) products.weight(columns, image, gw.data_ptr<T>());
    });
  }
  if (gi.defined() && !gi.is_same(grad_input)) copy_into(grad_input, gi);
  if (gw.defined() && !gw.is_same(grad_weight)) copy_into(grad_weight, gw);
  if (grad_bias.defined()) {
    Tensor gb = result_buffer(grad_bias, compute);
    with_float(compute, [&]<class T>() { sum_bias<T>(g, go.data_ptr<T>(), gb.data_ptr<T>()); });
    if (!gb.is_same(grad_bias)) copy_into(grad_bias, gb);
  }
}

}  // namespace kiln
