#include "net/freed_memory.h"

#include <malloc.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::net {
namespace {

// glibc caps the mmap threshold at 32 MiB on 64-bit machines.
constexpr int kMmapThreshold = 32 << 20;
constexpr int kTrimThreshold = 256 << 20;

bool Set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

absl::Status KeepFreedMemory() {
  const char* wanted = std::getenv("ACTORFLOW_KEEP_FREED_MEMORY");
  const std::string value = wanted == nullptr ? "" : wanted;
  if (!value.empty() && value != "0" && value != "1") {
    return absl::InvalidArgumentError(absl::StrCat(
        "ACTORFLOW_KEEP_FREED_MEMORY: expected 0 or 1, got '", value, "'"));
  }
  if (value == "0" || Set("MALLOC_MMAP_THRESHOLD_") ||
      Set("MALLOC_TRIM_THRESHOLD_")) {
    return absl::OkStatus();
  }
  static std::once_flag once;
  std::call_once(once, [] {
    // Under a sanitizer these return 0 and change nothing: its allocator
    // is not glibc's.
    mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
    mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
  });
  return absl::OkStatus();
}

}  // namespace actorflow::internal::net
