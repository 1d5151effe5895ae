#include "kiln/base/cpu_info.h"

#include <fstream>
#include <map>

namespace kiln {

std::string cpu_model() {
  // The first processor's fields; a virtual machine's brand string is often generic, so the
  // family and model numbers go with it.
  std::ifstream in("/proc/cpuinfo");
  std::map<std::string, std::string> fields;
  for (std::string line; std::getline(in, line) && !line.empty();) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    size_t start = line.find_first_not_of(' ', colon + 1);
    fields.emplace(key, start == std::string::npos ? "" : line.substr(start));
  }
  if (!fields.count("model name")) return "unknown CPU";
  std::string s = fields["model name"];
  if (fields.count("cpu family") && fields.count("model"))
    s += " (family " + fields["cpu family"] + ", model " + fields["model"] + ")";
  return s;
}

}  // namespace kiln
