#ifndef ACTORFLOW_NET_FREED_MEMORY_H_
#define ACTORFLOW_NET_FREED_MEMORY_H_

#include "absl/status/status.h"

namespace actorflow::internal::net {

// gRPC allocates a fresh buffer for every message it sends or reads (one
// block per message up to 1 MiB, 1 MiB blocks beyond), and glibc's malloc
// maps blocks that large anew each time, or trims the heap they came from,
// so every page of every register that crosses ranks is faulted in again:
// about 256 faults per MiB on each side. Where a fault is dear (tens of
// microseconds on some VMs) that, not the network, sets the speed.
//
// KeepFreedMemory has glibc keep freed memory for reuse instead: blocks up
// to 32 MiB come from the heap, and a heap keeps up to 256 MiB free at its
// top. A process that runs a job keeps the memory its transfers once
// needed (about the bytes in flight) rather than returning it.
//
// Once per process, from Job::Start. Left alone when the environment sets
// ACTORFLOW_KEEP_FREED_MEMORY=0, or sets glibc's MALLOC_MMAP_THRESHOLD_ or
// MALLOC_TRIM_THRESHOLD_ itself (the user's choice stands). Any other value
// of ACTORFLOW_KEEP_FREED_MEMORY than 0 or 1 is InvalidArgument.
absl::Status KeepFreedMemory();

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_FREED_MEMORY_H_
