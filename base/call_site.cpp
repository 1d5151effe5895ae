#include "kiln/base/call_site.h"

#include <fmt/format.h>

namespace kiln {
namespace {
thread_local CallSite t_site;
}

std::string CallSite::str() const {
  if (!known()) return "";
  return fmt::format("{}:{} in {}", file, line, function);
}

const CallSite& current_call_site() {
  return t_site;
}

CallSiteScope::CallSiteScope(const std::source_location& loc) {
  if (t_site.known() || loc.line() == 0) return;
  t_site = CallSite{loc.file_name(), loc.function_name(), loc.line()};
  owner_ = true;
}

CallSiteScope::CallSiteScope(const CallSite& site) {
  if (t_site.known() || !site.known()) return;
  t_site = site;
  owner_ = true;
}

CallSiteScope::~CallSiteScope() {
  if (owner_) t_site = CallSite{};
}

}  // namespace kiln
