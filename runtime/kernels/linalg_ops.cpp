// Matrix products through OpenBLAS (runtime/blas.h): mm and bmm. matmul's 1-D/2-D/batched rules are
// composed from these in the frontend.
#include <cblas.h>

#include "kiln/base/error.h"
#include "kiln/base/thread_pool.h"
#include "kiln/runtime/blas.h"
#include "kiln/runtime/dispatcher.h"
#include "kiln/runtime/kernels/copy_kernels.h"
#include "kiln/runtime/kernels/op_rules.h"
#include "kiln/runtime/op_table.h"

namespace kiln {
namespace {

// Over either size type (Note [Symbolic sizes]).
template <class Ref>
std::vector<rules::GeometryOf<Ref>> mm_shape(const OpDef& op, std::span<const Ref> in,
                                             const void*) {
  const Ref &a = in[0], &b = in[1];
  KILN_CHECK(a.sizes.size() == 2 && b.sizes.size() == 2,
             "{}: expected 2-D tensors, got shapes {} and {}", op.name, shape_str(a.sizes),
             shape_str(b.sizes));
  KILN_CHECK(a.sizes[1] == b.sizes[0],
             "{}: shapes {} and {} cannot be multiplied (inner dimensions {} and {} differ)",
             op.name, shape_str(a.sizes), shape_str(b.sizes), a.sizes[1], b.sizes[0]);
  return {rules::GeometryOf<Ref>{{a.sizes[0], b.sizes[1]}}};
}

template <class Ref>
std::vector<rules::GeometryOf<Ref>> bmm_shape(const OpDef& op, std::span<const Ref> in,
                                              const void*) {
  const Ref &a = in[0], &b = in[1];
  KILN_CHECK(a.sizes.size() == 3 && b.sizes.size() == 3,
             "{}: expected 3-D tensors, got shapes {} and {}", op.name, shape_str(a.sizes),
             shape_str(b.sizes));
  KILN_CHECK(a.sizes[0] == b.sizes[0], "{}: batch sizes differ in shapes {} and {}", op.name,
             shape_str(a.sizes), shape_str(b.sizes));
  KILN_CHECK(a.sizes[2] == b.sizes[1],
             "{}: shapes {} and {} cannot be multiplied (inner dimensions {} and {} differ)",
             op.name, shape_str(a.sizes), shape_str(b.sizes), a.sizes[2], b.sizes[1]);
  return {rules::GeometryOf<Ref>{{a.sizes[0], a.sizes[1], b.sizes[2]}}};
}

DType matmul_dtype(const OpDef& op, std::span<const MetaRef> in, const void*, size_t) {
  KILN_CHECK(in[0].dtype == in[1].dtype,
             "{}: expected both operands to have the same dtype, got {} and {}", op.name,
             in[0].dtype, in[1].dtype);
  KILN_CHECK(is_floating(in[0].dtype), "{}: dtype {} is not supported (expected floating point)",
             op.name, in[0].dtype);
  return in[0].dtype;
}

// A matrix operand as BLAS sees it: row-major with a leading dimension, possibly transposed.
struct BlasOperand {
  Tensor keep_alive;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 0;
};

// sizes/strides of the last two dims of `t` (a [.., rows, cols] tensor).
BlasOperand blas_operand(const Tensor& t, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 && rs >= std::max<int64_t>(1, cols)) return {t, CblasNoTrans, rs};
  if (rs == 1 && cs >= std::max<int64_t>(1, rows)) return {t, CblasTrans, cs};
  return {};  // needs a contiguous copy
}

template <class T>
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const T* a,
          int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  bool ta_t = ta == CblasTrans, tb_t = tb == CblasTrans;
  if constexpr (std::is_same_v<T, float>) {
    blas::sgemm(ta_t, tb_t, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  } else {
    blas::dgemm(ta_t, tb_t, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
  }
}

// Note [Batched small products]
// OpenBLAS splits one product across its threads, which pays for itself on large matrices; on
// attention's many small ones (B*h products of [256, 64] x [64, 256]) each call's split and
// join cost more than they save. There the batch is split across Kiln's threads instead, with
// each product on one thread (as torch's bmm does). The bound: a product under 2^24
// multiply-adds, and at least as many products as threads.
bool split_batch(int64_t batch, int64_t m, int64_t n, int64_t k) {
  int threads = get_num_threads();
  return threads > 1 && batch >= threads && !in_parallel_region() && m * n * k < (int64_t{1} << 24);
}

// out[b] = a[b] @ w[b] for 3-D a [B, m, k], w [B, k, n], out contiguous [B, m, n].
void batched_matmul(const Tensor& a_in, const Tensor& b_in, const Tensor& out) {
  DType dtype = out.dtype();
  bool half = element_size(dtype) == 2;
  Tensor a = half ? a_in.to(kFloat32) : a_in, b = half ? b_in.to(kFloat32) : b_in;
  Tensor c = half ? empty_tensor(out.sizes(), kFloat32, out.device()) : out;
  int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  if (m > 0 && n > 0) {
    if (k == 0) {
      fill_into(c, 0);
    } else {
      BlasOperand pa = blas_operand(a, m, k, a.stride(1), a.stride(2));
      if (!pa.keep_alive.defined()) {
        a = a.contiguous();
        pa = {a, CblasNoTrans, k};
      }
      BlasOperand pb = blas_operand(b, k, n, b.stride(1), b.stride(2));
      if (!pb.keep_alive.defined()) {
        b = b.contiguous();
        pb = {b, CblasNoTrans, n};
      }
      auto run = [&]<class T>() {
        const T* pa_data = a.data_ptr<T>();
        const T* pb_data = b.data_ptr<T>();
        T* pc = c.data_ptr<T>();
        auto products = [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            gemm<T>(pa.trans, pb.trans, m, n, k, pa_data + i * a.stride(0), pa.ld,
                    pb_data + i * b.stride(0), pb.ld, pc + i * m * n, n);
          }
        };
        if (split_batch(batch, m, n, k)) {
          blas::SingleThreadedScope one_thread_each;
          parallel_for(0, batch, 1, products);
        } else {
          park_workers();  // OpenBLAS's threads need the cores Kiln's workers would spin on
          products(0, batch);
        }
      };
      if (c.dtype() == kFloat64) {
        run.template operator()<double>();
      } else {
        run.template operator()<float>();
      }
    }
  }
  if (half) copy_into(out, c);
}

void mm_kernel(const OpDef&, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
               const void*) {
  batched_matmul(inputs[0].unsqueeze(0), inputs[1].unsqueeze(0), outputs[0].unsqueeze(0));
}

void bmm_kernel(const OpDef&, std::span<const Tensor> outputs, std::span<const Tensor> inputs,
                const void*) {
  batched_matmul(inputs[0], inputs[1], outputs[0]);
}

}  // namespace

void register_linalg_ops(OpTable& table) {
  OpDef& mm = table.add<NoAttrs>("mm", {"self", "mat2"}, 0, "NoAttrs");
  rules::set_shape_rules(mm, mm_shape<MetaRef>, mm_shape<SymMetaRef>);
  mm.dtype = matmul_dtype;
  mm.compute[static_cast<int>(DispatchKey::CPU)] = mm_kernel;

  OpDef& bmm = table.add<NoAttrs>("bmm", {"self", "mat2"}, 0, "NoAttrs");
  rules::set_shape_rules(bmm, bmm_shape<MetaRef>, bmm_shape<SymMetaRef>);
  bmm.dtype = matmul_dtype;
  bmm.compute[static_cast<int>(DispatchKey::CPU)] = bmm_kernel;
}

}  // namespace kiln
