#ifndef ACTORFLOW_PIPELINE_HTTP_CLIENT_H_
#define ACTORFLOW_PIPELINE_HTTP_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

// Byte ranges of files on an HTTP server, through libcurl. One client keeps
// its connections alive between requests (one per host), so reading a
// shard's members one range after another costs no new handshakes.
//
// A transient failure (connection refused or reset, a body cut short, no
// answer, a 5xx, 408 or 429 answer) is retried with exponential backoff;
// a retry asks only for the bytes not yet received, so no byte is read
// twice and none is lost. Other answers (404, 403, ...) fail at once.
namespace actorflow::internal::pipeline {

struct HttpRetry {
  int attempts = 6;  // in all, the first one included
  absl::Duration first_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);
};

// True for "http://..." and "https://..." (any case).
bool IsHttpUrl(absl::string_view path);

class HttpClient {
 public:
  explicit HttpClient(HttpRetry retry = HttpRetry());
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  struct Stat {
    int64_t size = 0;
    int64_t modified = -1;  // Last-Modified, seconds since 1970; -1: none
  };
  // The size of `url` in bytes and when it last changed, from a HEAD
  // request.
  absl::StatusOr<Stat> Head(const std::string& url);

  // Appends bytes [offset, offset + length) of `url` to `out`: fewer only
  // where the file ends first. Servers that ignore Range are read from the
  // start, the bytes before `offset` dropped.
  absl::Status Read(const std::string& url, int64_t offset, int64_t length,
                    std::string* out);

  // Once `*cancel` is true, the request in flight and any retry fail at
  // once (CancelledError). Null (the default): never cancelled.
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }

  // Requests retried so far (each retry of each request counts once).
  int64_t retries() const { return retries_; }
  // Requests made so far, retries included.
  int64_t requests() const { return requests_; }

  struct Attempt;  // what one request asked for and got (internal)

 private:
  // One request; `attempt` says what it read and whether to retry.
  void Perform(const std::string& url, bool head, Attempt* attempt);
  absl::Duration Backoff(int failures) const;
  void PauseBeforeRetry(absl::Duration wait) const;

  bool Cancelled() const {
    return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed);
  }

  void* curl_;  // CURL*
  HttpRetry retry_;
  const std::atomic<bool>* cancel_ = nullptr;
  int64_t retries_ = 0;
  int64_t requests_ = 0;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_HTTP_CLIENT_H_
