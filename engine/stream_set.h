#ifndef ACTORFLOW_ENGINE_STREAM_SET_H_
#define ACTORFLOW_ENGINE_STREAM_SET_H_

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "engine/context.h"

namespace actorflow::engine {

// The CUDA streams one engine worker uses: one per GPU it has run on,
// created on first use and destroyed with the set. CPU contexts get none.
class StreamSet {
 public:
  StreamSet() = default;
  ~StreamSet();
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;

  // {ctx, the stream for ctx's device} (stream null on CPU); fails if the
  // stream cannot be created.
  absl::StatusOr<RunContext> For(const Context& ctx);

 private:
  internal::Mutex mu_;
  // device -> cudaStream_t
  absl::flat_hash_map<int, void*> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_STREAM_SET_H_
