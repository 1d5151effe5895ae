#include "kiln/codegen/disk_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>

namespace kiln::codegen {
namespace {

// File layout: magic, key, '\n', payload size (8 bytes, little endian), FNV-1a of the payload
// (8 bytes), payload.
constexpr std::string_view kMagic = "KILNCACHE1\n";

void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(std::string_view s) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(s[static_cast<size_t>(i)]);
  return v;
}

std::atomic<uint64_t> temp_counter{0};

}  // namespace

uint64_t fnv1a64(std::string_view data) {
  uint64_t h = 14695981039346656037ull;
  for (char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string DiskCache::path(std::string_view key) const {
  return (std::filesystem::path(dir_) / (std::string(key) + ".bin")).string();
}

void DiskCache::evict(std::string_view key) const {
  std::error_code ec;
  std::filesystem::remove(path(key), ec);
}

DiskCache::Lookup DiskCache::load(std::string_view key) const {
  Lookup r;
  auto corrupt = [&](std::string why) {
    r.status = Status::Corrupt;
    r.problem = fmt::format("{}: {}", path(key), why);
    evict(key);
    return r;
  };
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer forever.
  int fd = ::open(path(key).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return r;  // a miss
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return corrupt("not a regular file");
  }
  std::string file(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < file.size()) {
    ssize_t n = ::read(fd, file.data() + got, file.size() - got);
    if (n < 0 && errno == EINTR) continue;  // a signal, not the end of the file
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  file.resize(got);
  size_t header = kMagic.size() + key.size() + 1 + 16;
  if (file.size() < header)
    return corrupt(fmt::format("{} bytes, shorter than the header", file.size()));
  std::string_view f(file);
  if (f.substr(0, kMagic.size()) != kMagic) return corrupt("not a Kiln cache file (bad magic)");
  if (f.substr(kMagic.size(), key.size()) != key || f[kMagic.size() + key.size()] != '\n')
    return corrupt("the file's key does not match its name");
  uint64_t size = get_u64(f.substr(header - 16, 8));
  uint64_t sum = get_u64(f.substr(header - 8, 8));
  if (size != file.size() - header)
    return corrupt(
        fmt::format("truncated: {} payload bytes, the header says {}", file.size() - header, size));
  std::string_view payload = f.substr(header);
  if (fnv1a64(payload) != sum) return corrupt("checksum mismatch");
  r.status = Status::Hit;
  r.payload = std::string(payload);
  return r;
}

std::string DiskCache::store(std::string_view key, std::string_view payload) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return fmt::format("cannot create {}: {}", dir_, ec.message());
  std::string file(kMagic);
  file.append(key);
  file.push_back('\n');
  put_u64(file, payload.size());
  put_u64(file, fnv1a64(payload));
  file.append(payload);
  std::string tmp = fmt::format("{}.tmp.{}.{}", path(key), ::getpid(), temp_counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    if (!out) {
      fs::remove(tmp, ec);
      return fmt::format("cannot write {}", tmp);
    }
  }
  fs::rename(tmp, path(key), ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return fmt::format("cannot rename {} into place: {}", tmp, ec.message());
  }
  return {};
}

}  // namespace kiln::codegen
