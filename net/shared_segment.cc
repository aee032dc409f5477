#include "net/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace actorflow::internal::net {
namespace {

constexpr char kPrefix[] = "/actorflow-";

std::string NewName() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return absl::StrCat(kPrefix, getpid(), "-", salt % 1000000, "-",
                      counter.fetch_add(1, std::memory_order_relaxed));
}

absl::Status Errno(const std::string& what, int error) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(error)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedSegment>> SharedSegment::Create(
    int64_t bytes) {
  constexpr int64_t kPage = 4096;
  const int64_t size = (kHeaderBytes + bytes + kPage - 1) / kPage * kPage;
  const std::string name = NewName();
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return Errno(absl::StrCat("shm_open ", name), errno);
  // posix_fallocate returns the error rather than setting errno.
  int error = ftruncate(fd, size) == 0 ? 0 : errno;
  if (error == 0) error = posix_fallocate(fd, 0, size);
  void* data = error == 0 ? mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                 MAP_SHARED, fd, 0)
                          : MAP_FAILED;
  if (error == 0 && data == MAP_FAILED) error = errno;
  close(fd);
  if (error != 0) {
    shm_unlink(name.c_str());
    return Errno(absl::StrCat("reserving ", size, " bytes of shared memory (",
                              name, ")"),
                 error);
  }
  new (data) std::atomic<uint32_t>(0);
  return std::unique_ptr<SharedSegment>(
      new SharedSegment(name, static_cast<char*>(data), size, true));
}

absl::StatusOr<std::unique_ptr<SharedSegment>> SharedSegment::Open(
    const std::string& name) {
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, kPrefix) || rest.empty() ||
      absl::StrContains(rest, '/')) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not a shared memory segment's name"));
  }
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return Errno(absl::StrCat("shm_open ", name), errno);
  shm_unlink(name.c_str());
  struct stat info;
  int error = fstat(fd, &info) == 0 ? 0 : errno;
  const int64_t size = error == 0 ? info.st_size : 0;
  void* data =
      error == 0 && size >= kHeaderBytes
          ? mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
          : MAP_FAILED;
  if (error == 0 && size >= kHeaderBytes && data == MAP_FAILED) {
    error = errno;
  }
  close(fd);
  if (error != 0) return Errno(absl::StrCat("mapping ", name), error);
  if (size < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat("shared memory segment ", name,
                                            " holds only ", size, " bytes"));
  }
  return std::unique_ptr<SharedSegment>(
      new SharedSegment(name, static_cast<char*>(data), size, false));
}

bool SharedSegment::TryClaim() {
  uint32_t free = 0;
  return busy()->compare_exchange_strong(free, 1, std::memory_order_acquire,
                                         std::memory_order_relaxed);
}

void SharedSegment::Release() { busy()->store(0, std::memory_order_release); }

bool SharedSegment::IsFree() const {
  return busy()->load(std::memory_order_acquire) == 0;
}

SharedSegment::~SharedSegment() {
  munmap(data_, size_);
  if (created_) shm_unlink(name_.c_str());
}

std::string SharedMemoryHostId() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(boot, id) || id.empty()) return "";
  for (const char* ns : {"ipc", "mnt", "net"}) {
    char link[256];
    const ssize_t length = readlink(absl::StrCat("/proc/self/ns/", ns).c_str(),
                                    link, sizeof(link) - 1);
    if (length <= 0) return "";
    absl::StrAppend(&id, " ", absl::string_view(link, length));
  }
  absl::StrAppend(&id, " uid ", geteuid());
  return id;
}

}  // namespace actorflow::internal::net
