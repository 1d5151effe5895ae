// An on-disk cache of compiled artifacts (DESIGN.md principle 6), shared by the backends: one
// file per content hash under a folder of $KILN_CACHE_DIR. Each file carries a header with the
// key, the payload's size and a checksum, so a truncated or corrupted file is detected (and
// removed, for the caller to recompile and store again) instead of being loaded. Only regular
// files are read, without blocking: a FIFO or a folder under a key's name is a corrupt entry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::codegen {

class DiskCache {
 public:
  // `dir`: the cache folder, made on first store.
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}

  enum class Status { Hit, Miss, Corrupt };
  struct Lookup {
    Status status = Status::Miss;
    std::string payload;  // on a hit
    std::string problem;  // on Corrupt: what was wrong, for the log
  };
  // `key`: printable, no path separators (a hex digest).
  Lookup load(std::string_view key) const;
  // Writes atomically (a temporary file renamed into place), so that a concurrent reader sees
  // the old file or the new one. Returns an error message, empty on success.
  std::string store(std::string_view key, std::string_view payload) const;

  // Removes the file of `key` (one that loaded but proved unusable), if there is one.
  void evict(std::string_view key) const;

  std::string path(std::string_view key) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// FNV-1a, 64 bits: the cache files' checksum (it detects damage, it is not a content hash).
uint64_t fnv1a64(std::string_view data);

}  // namespace kiln::codegen
