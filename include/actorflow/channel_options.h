#ifndef ACTORFLOW_CHANNEL_OPTIONS_H_
#define ACTORFLOW_CHANNEL_OPTIONS_H_

#include <cstdint>

#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// How a Channel (thread/channel.h) waits and what it reserves: part of
// SessionOptions, so it stands apart from the channel's machinery.
struct ChannelOptions {
  // How long an empty receiver spins, at most, before it parks, while a CPU
  // is free for it (spin_wait.h). Waking a parked thread costs tens of
  // microseconds on a VM, and at times milliseconds; a spinning one takes a
  // message in well under one. 0 parks at once.
  int64_t spin_ns = 1'000'000;  // kDefaultSpinNs
  // The CPUs the process may keep busy (usable_cpus.h): a receiver spins
  // only while no more threads than that are awake (spin_wait.h). 0: the
  // process's figure.
  int usable_cpus = 0;
  // Items each sender's lane (and a Thread's receive batch and local queue)
  // has room for from the start, up to 4096 per lane. A channel that never
  // has more than this queued from one sender allocates nothing after each
  // sender's first Send. The first lane is made at once with all of it.
  uint32_t reserve = 0;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_CHANNEL_OPTIONS_H_
