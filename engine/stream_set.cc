#include "engine/stream_set.h"

#include "actorflow/cuda_api.h"

namespace actorflow::engine {

StreamSet::~StreamSet() {
  for (auto& [device, stream] : streams_) cuda::StreamDestroy(device, stream);
}

absl::StatusOr<RunContext> StreamSet::For(const Context& ctx) {
  if (!ctx.is_gpu()) return RunContext{ctx, nullptr};
  internal::MutexLock lock(&mu_);
  auto it = streams_.find(ctx.dev_id);
  if (it == streams_.end()) {
    absl::StatusOr<void*> stream = cuda::StreamCreate(ctx.dev_id);
    if (!stream.ok()) return stream.status();
    it = streams_.emplace(ctx.dev_id, *stream).first;
  }
  return RunContext{ctx, it->second};
}

}  // namespace actorflow::engine
