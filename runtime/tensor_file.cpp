#include "kiln/runtime/tensor_file.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "kiln/base/error.h"
#include "kiln/base/shape.h"
#include "kiln/runtime/dispatcher.h"

namespace kiln {
namespace {

constexpr const char* kMagic = "kiln-tensors 1";

bool has_space(const std::string& s) {
  return s.empty() || s.find_first_of(" \t\n\r") != std::string::npos;
}

DType dtype_named(const std::string& name, const std::string& path) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    if (dtype_name(t) == name) return t;
  }
  throw Error(fmt::format("load_tensors: {}: unknown dtype '{}'", path, name));
}

}  // namespace

std::string TensorFile::meta_value(const std::string& key, const std::string& fallback) const {
  for (const auto& [k, v] : meta)
    if (k == key) return v;
  return fallback;
}

void save_tensors(const std::string& path, const TensorFile& file) {
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out.good(), "save_tensors: cannot open {} for writing", path);
  out << kMagic << "\n";
  for (const auto& [key, value] : file.meta) {
    KILN_CHECK(!has_space(key) && !has_space(value),
               "save_tensors: {}: meta key '{}' and value '{}' must be non-empty words", path, key,
               value);
    out << "meta " << key << " " << value << "\n";
  }
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const Tensor& t = file.tensors[i];
    KILN_CHECK(t.defined(), "save_tensors: {}: tensor {} is undefined", path, i);
    Tensor host = t.detach().to(kCPU).contiguous();
    out << "tensor " << dtype_name(host.dtype()) << " " << host.dim();
    for (int64_t s : host.sizes())
      out << " " << s;
    out << "\n";
    out.write(
        static_cast<const char*>(host.raw_data()),
        static_cast<std::streamsize>(host.numel() * static_cast<int64_t>(host.element_size())));
    out << "\n";
  }
  out << "end\n";
  KILN_CHECK(out.good(), "save_tensors: writing {} failed", path);
}

TensorFile load_tensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), "load_tensors: cannot open {}", path);
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  std::string line;
  KILN_CHECK(std::getline(in, line) && line == kMagic,
             "load_tensors: {} is not a tensor file (its first line is not '{}')", path, kMagic);
  TensorFile file;
  while (true) {
    KILN_CHECK(static_cast<bool>(std::getline(in, line)),
               "load_tensors: {} is truncated after {} tensors (no 'end' line)", path,
               file.tensors.size());
    if (line == "end") break;
    std::istringstream words(line);
    std::string word;
    words >> word;
    if (word == "meta") {
      std::string key, value;
      KILN_CHECK(static_cast<bool>(words >> key >> value), "load_tensors: {}: malformed line '{}'",
                 path, line);
      file.meta.emplace_back(key, value);
      continue;
    }
    KILN_CHECK(word == "tensor", "load_tensors: {}: expected 'tensor', 'meta' or 'end', found '{}'",
               path, line);
    std::string dtype;
    int64_t ndim = -1;
    words >> dtype >> ndim;
    KILN_CHECK(!words.fail() && ndim >= 0 && ndim <= 64, "load_tensors: {}: malformed line '{}'",
               path, line);
    Shape sizes(static_cast<size_t>(ndim));
    for (int64_t& s : sizes) {
      words >> s;
      KILN_CHECK(!words.fail() && s >= 0, "load_tensors: {}: malformed sizes in '{}'", path, line);
    }
    // Sizes are checked against the bytes left in the file before anything is allocated, so
    // a corrupt header cannot ask for terabytes.
    DType dt = dtype_named(dtype, path);
    int64_t left = file_size - static_cast<int64_t>(in.tellg());
    int64_t numel = 1;
    for (int64_t s : sizes) {
      KILN_CHECK(s == 0 || numel <= left / s,
                 "load_tensors: {}: tensor {} of sizes {} is larger than the rest of the file",
                 path, file.tensors.size(), shape_str(sizes));
      numel *= s;
    }
    KILN_CHECK(numel * static_cast<int64_t>(element_size(dt)) <= left,
               "load_tensors: {} is truncated inside tensor {} (sizes {})", path,
               file.tensors.size(), shape_str(sizes));
    Tensor t = empty_tensor(sizes, dt, kCPU);
    auto bytes = static_cast<std::streamsize>(t.numel() * static_cast<int64_t>(t.element_size()));
    in.read(static_cast<char*>(t.raw_data()), bytes);
    KILN_CHECK(in.gcount() == bytes && in.get() == '\n',
               "load_tensors: {} is truncated inside tensor {} ({} bytes expected)", path,
               file.tensors.size(), bytes);
    file.tensors.push_back(std::move(t));
  }
  return file;
}

}  // namespace kiln
