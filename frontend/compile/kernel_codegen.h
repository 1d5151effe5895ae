// Code generation for a plan's fusion groups: each lowered kernel is compiled by the plan's
// backend and attached to its FusionGroup node (FusionGroupAttrs::compiled), which the plan
// executor then launches instead of interpreting the kernel IR.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/frontend/compile.h"
#include "kiln/ir/graph.h"

namespace kiln::compile_detail {

// The backend a CompileOptions::backend request runs on in this build: Auto is $KILN_BACKEND
// when set ("interpreter", "llvm" or "cuda"), else CUDA when `any_cuda_input`, else LLVM where it
// is built in and the interpreter otherwise. Throws kiln::Error for a backend this build cannot
// run (CUDA without KILN_WITH_CUDA; whether a device exists is checked when kernels compile).
Backend resolve_backend(Backend requested, bool any_cuda_input = false);

// Compiles every lowered fusion group of `g` with `backend` (Interpreter: nothing to do). Under
// CUDA, groups whose outputs live on a CUDA device become CUDA kernels and the others LLVM ones
// (where LLVM is built in). A CPU group whose compile fails keeps running in the kernel-IR
// interpreter; a CUDA group has no such fallback (the interpreter reads host memory), so its
// failure is an error naming the kernel. Each distinct failing kernel warns once on stderr, and
// every failure is logged under "fallbacks". With `keep_debug_text`, the generated sources are
// appended to `debug_files` as (file name, text).
void compile_kernels(ir::Graph& g, Backend backend, bool keep_debug_text,
                     std::vector<std::pair<std::string, std::string>>* debug_files);

}  // namespace kiln::compile_detail
