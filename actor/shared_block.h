#ifndef ACTORFLOW_ACTOR_SHARED_BLOCK_H_
#define ACTORFLOW_ACTOR_SHARED_BLOCK_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

// One allocation that several registers share (RegisterDescProto.
// mem_block_id), seen by the checks a session makes when asked
// (SessionOptions::check_memory_sharing): at most one member holds data at
// a time, from its producer's act until its last reader's act is done, and
// a member's bytes are poisoned the moment that last reader is done, so a
// later read gives garbage (NaN) rather than the right numbers.
class SharedBlock {
 public:
  explicit SharedBlock(int64_t id) : id_(id) {}

  int64_t id() const { return id_; }

  // regst_desc `desc`'s producer is about to write it, for `readers`
  // readers. Empty, or why that breaks the block.
  std::string Claim(int64_t desc, int readers) {
    int64_t holder = 0;
    if (!live_.compare_exchange_strong(holder, desc,
                                       std::memory_order_acq_rel)) {
      return absl::StrCat("shared memory block ", id_, ": regst_desc ", desc,
                          " was written while regst_desc ", holder,
                          " held data in it");
    }
    readers_left_.store(readers, std::memory_order_relaxed);
    return "";
  }
  // A reader of `desc` finished its act; the last one poisons the bytes
  // and opens the block. Empty, or why the read was not of live data.
  std::string ReaderDone(int64_t desc, void* data, size_t bytes) {
    const int64_t holder = live_.load(std::memory_order_acquire);
    if (holder != desc) {
      return absl::StrCat("shared memory block ", id_, ": regst_desc ", desc,
                          " was read while ",
                          holder == 0 ? std::string("no register")
                                      : absl::StrCat("regst_desc ", holder),
                          " held data in it");
    }
    if (readers_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Open(data, bytes);
    }
    return "";
  }
  // `desc`'s register is free again without readers (nobody reads it, its
  // act failed, or a run starts): if it still holds the block, it poisons
  // and opens it.
  void ReleaseIfHeld(int64_t desc, void* data, size_t bytes) {
    if (live_.load(std::memory_order_acquire) == desc) Open(data, bytes);
  }

  // 0xFF bytes: NaN as floats, -1 as integers.
  static constexpr int kPoison = 0xFF;

 private:
  void Open(void* data, size_t bytes) {
    if (data != nullptr) std::memset(data, kPoison, bytes);
    live_.store(0, std::memory_order_release);
  }

  const int64_t id_;
  std::atomic<int64_t> live_{0};  // the member holding data; 0: none
  std::atomic<int> readers_left_{0};
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_SHARED_BLOCK_H_
