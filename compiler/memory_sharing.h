#ifndef ACTORFLOW_COMPILER_MEMORY_SHARING_H_
#define ACTORFLOW_COMPILER_MEMORY_SHARING_H_

#include <cstdint>
#include <map>

#include "plan/register_lifetimes.h"
#include "proto/plan.pb.h"

namespace actorflow::internal {

// Gives every register inside a training window one buffer: the window
// runs one piece at a time, so a second one would never be used (see
// RegisterLifetimes). Returns how many registers it cut.
int SingleBufferInWindows(const RegisterLifetimes& lifetimes, Plan* plan);

// What ShareMemory did.
struct MemorySharing {
  int blocks = 0;     // shared blocks (mem_block_id) made
  int registers = 0;  // registers placed in them
  // Bytes of those registers' buffers minus the blocks' bytes.
  int64_t bytes_saved = 0;
};

// Puts registers of one buffer whose lifetimes never overlap into shared
// blocks (RegisterDescProto.mem_block_id), largest first, each into the first
// block where it overlaps no member. `bytes`: each register's buffer size
// by regst_desc id. Only registers in host memory share, and only in plans
// on one machine (each process validates its own share of a plan over
// several, where the paths through the others are not there to see).
MemorySharing ShareMemory(const RegisterLifetimes& lifetimes,
                          const std::map<int64_t, int64_t>& bytes, Plan* plan);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_COMPILER_MEMORY_SHARING_H_
