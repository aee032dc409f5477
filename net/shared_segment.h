#ifndef ACTORFLOW_NET_SHARED_SEGMENT_H_
#define ACTORFLOW_NET_SHARED_SEGMENT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace actorflow::internal::net {

// A POSIX shared memory segment mapped into this process: how ranks on one
// host move registers (Transport). The sending rank creates one per slot
// of an edge and names it in the piece's message; the receiving rank
// opens it by that name and unlinks the name at once, so the memory goes
// away with the last process that maps it.
//
// Its first kHeaderBytes hold a flag: whether the bytes after it wait for
// the receiver. The sender claims a free segment before it writes; the
// receiver releases it once it copied them out (release, then the
// sender's claim acquires: its next writes come after those reads). The creator
// unlinks too when it drops the segment (harmless once the receiver did): only
// a sender killed between creating a segment and its receiver opening it leaves
// a name in /dev/shm.
class SharedSegment {
 public:
  // A new segment with room for `bytes` after its header, read-write, mode
  // 0600, under a name no other has. Its memory is reserved up front
  // (posix_fallocate): a /dev/shm too small for it (a container's 64 MiB) fails
  // here, never with SIGBUS at the first write. The flag starts free.
  static absl::StatusOr<std::unique_ptr<SharedSegment>> Create(int64_t bytes);
  // The segment `name`, its name unlinked. Only names Create makes are
  // accepted (InvalidArgument otherwise).
  static absl::StatusOr<std::unique_ptr<SharedSegment>> Open(
      const std::string& name);
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  static constexpr int64_t kHeaderBytes = 64;
  // The sender: whether the segment was free, and now is not.
  bool TryClaim();
  // The receiver, after reading the bytes.
  void Release();
  // The sender: whether the receiver has released it (acquire: what it read
  // before happens-before what the sender writes after).
  bool IsFree() const;

  // The whole mapping, the header included.
  char* data() const { return data_; }
  int64_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  SharedSegment(std::string name, char* data, int64_t size, bool created)
      : name_(std::move(name)), data_(data), size_(size), created_(created) {}

  std::atomic<uint32_t>* busy() const {
    return reinterpret_cast<std::atomic<uint32_t>*>(data_);
  }

  const std::string name_;
  char* const data_;
  const int64_t size_;
  const bool created_;
};

// What decides whether two ranks can share memory: this machine's boot id,
// this process's IPC, mount and network namespaces, and its user (a
// segment is its creator's alone, mode 0600). Ranks in different network
// namespaces count as different hosts (containers on one machine usually
// have their own /dev/shm too, and tests emulate hosts that way). Empty
// where the boot id cannot be read.
std::string SharedMemoryHostId();

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_SHARED_SEGMENT_H_
