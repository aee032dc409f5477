#ifndef ACTORFLOW_THREAD_THREAD_MGR_H_
#define ACTORFLOW_THREAD_THREAD_MGR_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "thread/async_thread.h"
#include "thread/gpu_thread.h"
#include "thread/strand_pool.h"
#include "thread/thread.h"

namespace actorflow::internal {

// Plain CPU streams that any of `workers` threads may run, instead of a
// thread each (strand_pool.h).
struct StreamPoolSpec {
  int workers = 0;  // 0: no pool
  std::vector<StreamKey> streams;
  int usable_cpus = 0;  // for the workers' waits (spin_wait.h)
};

// Owns one started Thread per distinct stream. Threads get dense indices in
// order of first appearance, so later routing is an array lookup. The
// destructor stops every thread (each drains what was sent to it before) and
// joins them all.
template <typename Msg>
class ThreadMgr {
 public:
  // Every thread hands its messages to `handler`, which must outlive the
  // manager and may be called from all threads at once.
  static absl::StatusOr<std::unique_ptr<ThreadMgr>> Create(
      absl::Span<const StreamKey> streams, MsgHandler<Msg>* handler,
      ChannelOptions options = {}) {
    return Create(
        streams, [handler](const StreamKey&) { return handler; }, options);
  }

  // The thread of stream `key` hands its messages to handler_for(key) (each
  // thread its own handler, such as the actors it owns); every handler must
  // outlive the manager.
  //
  // The streams of `pool` (plain CPU streams among `streams`) run on its
  // workers rather than on a thread each.
  static absl::StatusOr<std::unique_ptr<ThreadMgr>> Create(
      absl::Span<const StreamKey> streams,
      const std::function<MsgHandler<Msg>*(const StreamKey&)>& handler_for,
      ChannelOptions options = {}, const StreamPoolSpec& pool = {}) {
    std::unique_ptr<ThreadMgr> mgr(new ThreadMgr());
    absl::flat_hash_set<StreamKey> pooled(pool.streams.begin(),
                                          pool.streams.end());
    if (pool.workers > 0) {
      mgr->pool_ = std::make_unique<StrandPool<Msg>>(
          pool.workers, pool.usable_cpus, options.spin_ns, "cpu-pool");
    }
    for (const StreamKey& key : streams) {
      if (mgr->index_.contains(key)) continue;
      if (key.machine_id != 0) {
        return absl::UnimplementedError(absl::StrCat(
            "stream ", key.ToString(),
            ": machine_id must be 0 (a multi-machine plan runs one "
            "partition per rank: net/plan_partition.h)"));
      }
      if (key.device_index < 0 || key.stream_index < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("stream ", key.ToString(),
                         ": device_index and stream_index must be >= 0"));
      }
      if (key.device == DeviceKind::kGpu && key.host_async) {
        return absl::InvalidArgumentError(
            absl::StrCat("stream ", key.ToString(),
                         ": host_async applies to CPU streams only"));
      }
      mgr->index_[key] = static_cast<int>(mgr->threads_.size());
      MsgHandler<Msg>* handler = handler_for(key);
      if (key.device == DeviceKind::kGpu) {
        auto thread = GpuThread<Msg>::Create(key, handler, options);
        if (!thread.ok()) return thread.status();
        mgr->threads_.push_back(std::move(*thread));
      } else if (key.host_async) {
        mgr->threads_.push_back(
            std::make_unique<AsyncThread<Msg>>(key, handler, options));
      } else if (mgr->pool_ != nullptr && pooled.contains(key)) {
        mgr->threads_.push_back(mgr->pool_->NewStrand(key, handler, options));
      } else {
        mgr->threads_.push_back(
            std::make_unique<CpuThread<Msg>>(key, handler, options));
      }
    }
    // Start only once every stream is known to be valid, so a failed Create
    // leaves no thread behind.
    for (auto& thread : mgr->threads_) thread->Start();
    if (mgr->pool_ != nullptr) mgr->pool_->Start();
    return mgr;
  }

  ~ThreadMgr() {
    StopAll();
    // An abandoned loop still runs on this object: it is never freed. Nor
    // is the pool whose worker may be running it.
    bool abandoned = false;
    for (auto& thread : threads_) {
      if (thread->abandoned()) {
        (void)thread.release();
        abandoned = true;
      }
    }
    if (abandoned && pool_ != nullptr) (void)pool_.release();
  }
  ThreadMgr(const ThreadMgr&) = delete;
  ThreadMgr& operator=(const ThreadMgr&) = delete;

  absl::StatusOr<Thread<Msg>*> Find(const StreamKey& key) const {
    auto it = index_.find(key);
    if (it != index_.end()) return threads_[it->second].get();
    std::vector<std::string> known;
    for (const auto& thread : threads_)
      known.push_back(thread->key().ToString());
    return absl::NotFoundError(
        absl::StrCat("no thread for stream ", key.ToString(),
                     "; threads: ", absl::StrJoin(known, ", ")));
  }

  absl::StatusOr<int> IndexOf(const StreamKey& key) const {
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    return Find(key).status();
  }

  // Precondition: 0 <= index < size().
  Thread<Msg>* thread(int index) const { return threads_[index].get(); }
  int size() const { return static_cast<int>(threads_.size()); }
  // The pool's workers (0: no pool).
  int pool_workers() const { return pool_ == nullptr ? 0 : pool_->workers(); }

  // Detaches thread `index` instead of joining it (see Thread::Abandon).
  void Abandon(int index) { threads_[index]->Abandon(); }

  // Closes every thread first, then joins them, so no thread waits on a
  // sibling that has not been told to stop. Idempotent.
  void StopAll() {
    for (auto& thread : threads_) thread->RequestStop();
    for (auto& thread : threads_) thread->Stop();
    if (pool_ != nullptr) pool_->Join();
    for (auto& thread : threads_) thread->JoinHelpers();
  }

 private:
  ThreadMgr() = default;

  // Declared first: destroyed after the strands it runs.
  std::unique_ptr<StrandPool<Msg>> pool_;
  std::vector<std::unique_ptr<Thread<Msg>>> threads_;
  absl::flat_hash_map<StreamKey, int> index_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_THREAD_MGR_H_
