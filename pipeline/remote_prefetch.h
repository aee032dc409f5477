#ifndef ACTORFLOW_PIPELINE_REMOTE_PREFETCH_H_
#define ACTORFLOW_PIPELINE_REMOTE_PREFETCH_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "base/mutex.h"
#include "pipeline/http_client.h"

// Byte runs of remote files fetched, in the order asked, on a thread of
// their own: a reader's thread runs other stages too, and must not sit in
// a network wait while a run it will need later is in flight.
namespace actorflow::internal::pipeline {

class RemotePrefetcher {
 public:
  // One fetch: `bytes` and `status` are written by the fetching thread
  // before `done` is set, and read only after Wait saw it set.
  struct Run {
    std::string url;
    int64_t offset = 0, length = 0;
    std::string bytes;
    int64_t buffer_class = 0;  // the spare class `bytes` came from; 0: none
    absl::Status status;
    Mutex mu;
    CondVar done_cv;
    bool done ABSL_GUARDED_BY(mu) = false;
  };

  // The longest run worth asking for in one request.
  static constexpr int64_t kRunBytes = 4 << 20;
  // Run buffers kept for reuse, in all (see Spares).
  static constexpr int64_t kSpareBytes = 64 << 20;

  explicit RemotePrefetcher(HttpRetry retry);
  // Cancels the fetch in flight and the queued ones, and joins the thread.
  ~RemotePrefetcher();
  RemotePrefetcher(const RemotePrefetcher&) = delete;
  RemotePrefetcher& operator=(const RemotePrefetcher&) = delete;

  // Queues bytes [offset, offset + length) of `url`.
  std::shared_ptr<Run> Fetch(const std::string& url, int64_t offset,
                             int64_t length);
  // Blocks until `run` is fetched (or failed); its status.
  static absl::Status Wait(Run* run);

 private:
  void Loop();

  // Run buffers that no run holds any more, by capacity class (a power of
  // two from 64 KiB to kRunBytes), at most kSpareBytes together. A fresh
  // buffer per run costs a page fault and a page cleared every 4 KiB that
  // the socket copy then writes (more than the copy itself: the allocator
  // returns freed large blocks to the system); a buffer of the run's own
  // class keeps what is resident near what the runs in flight hold.
  // Shared with the runs' deleters, which may outlive the prefetcher.
  struct Spares {
    Mutex mu;
    std::map<int64_t, std::vector<std::string>> by_class ABSL_GUARDED_BY(mu);
    int64_t bytes ABSL_GUARDED_BY(mu) = 0;
  };
  std::shared_ptr<Spares> spares_ = std::make_shared<Spares>();

  Mutex mu_;
  CondVar queued_cv_;
  std::deque<std::shared_ptr<Run>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> cancel_{false};
  HttpClient http_;  // the thread's alone
  std::thread thread_;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_REMOTE_PREFETCH_H_
