// The user's Python line as the call site of the ops it calls (base/call_site.h), so that
// traced graphs, kiln.compile's dumps and anomaly mode name `train.py:42 in step`, not a line of
// the binding. Only looked up while a trace or anomaly mode will record it: reading the frame
// costs more than a small op.
#include <mutex>
#include <set>
#include <string>

#include "kiln/runtime/autograd/grad_mode.h"
#include "kiln/runtime/tracing_state.h"
#include "python_common.h"

namespace kiln::python {
namespace {

std::string g_package_dir;  // frames in the kiln package itself are skipped

// CallSite holds plain pointers that IR nodes keep: the strings live as long as the process.
const char* intern(const char* text) {
  static std::mutex mutex;
  static auto* pool = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return pool->emplace(text).first->c_str();
}

}  // namespace

void set_package_dir(std::string dir) {
  g_package_dir = std::move(dir);
}

PythonCallSite::PythonCallSite() {
  if (!is_tracing() && !AnomalyMode::is_enabled()) return;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    bool inside_kiln = file != nullptr && !g_package_dir.empty() &&
                       std::string_view(file).starts_with(g_package_dir);
    if (!inside_kiln && file != nullptr) {
      const char* function = PyUnicode_AsUTF8(code->co_name);
      scope_.emplace(CallSite{intern(file), intern(function != nullptr ? function : "?"),
                              static_cast<uint32_t>(PyFrame_GetLineNumber(frame))});
      Py_DECREF(code);
      Py_DECREF(frame);
      return;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  PyErr_Clear();
}

}  // namespace kiln::python
