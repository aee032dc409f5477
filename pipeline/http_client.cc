#include "pipeline/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <limits>

#include "absl/base/call_once.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace actorflow::internal::pipeline {
namespace {

absl::once_flag curl_once;

// curl_global_init is not thread-safe: once per process, before any handle.
void InitCurl() {
  absl::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool TransientCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool TransientHttpCode(long code) {
  return code >= 500 || code == 408 || code == 429;
}

absl::Status HttpError(const std::string& url, long code) {
  const std::string text = absl::StrCat("'", url, "': HTTP ", code);
  if (code == 404 || code == 410) return absl::NotFoundError(text);
  if (code == 401 || code == 403) return absl::PermissionDeniedError(text);
  return absl::FailedPreconditionError(text);
}

}  // namespace

bool IsHttpUrl(absl::string_view path) {
  return absl::StartsWithIgnoreCase(path, "http://") ||
         absl::StartsWithIgnoreCase(path, "https://");
}

// What one request asked for and what came of it.
struct HttpClient::Attempt {
  void* curl = nullptr;
  int64_t begin = 0;  // the first byte wanted
  int64_t end = 0;    // one past the last
  std::string* out = nullptr;
  // Filled in by the request:
  long code = 0;
  CURLcode result = CURLE_OK;
  int64_t skip = -1;  // bytes before `begin` still to drop (-1: not known)
  int64_t received = 0;
  bool done = false;  // every wanted byte is in `out`
  int64_t content_length = -1;
  int64_t modified = -1;
  char error[CURL_ERROR_SIZE] = {};
};

namespace {

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* a = static_cast<HttpClient::Attempt*>(user);
  const int64_t bytes = static_cast<int64_t>(size * count);
  if (a->skip < 0) {
    curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &a->code);
    // 206: the range itself; 200: the whole file (the server ignored
    // Range), whose first `begin` bytes are not wanted.
    a->skip = a->code == 200 ? a->begin : 0;
  }
  if (a->code != 200 && a->code != 206) return bytes;  // an error page
  int64_t at = std::min(a->skip, bytes);
  a->skip -= at;
  const int64_t wanted = a->end - a->begin - a->received;
  const int64_t take = std::min(bytes - at, wanted);
  a->out->append(data + at, take);
  a->received += take;
  if (a->received == a->end - a->begin) {
    a->done = true;
    // The rest of a whole-file answer is not wanted: stop the transfer
    // (the caller reads the write error as success, since done is set).
    if (a->code == 200) return 0;
  }
  return bytes;
}

// A transfer's progress callback: a non-zero answer aborts it.
int CheckCancel(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return cancel != nullptr &&
                 static_cast<const std::atomic<bool>*>(cancel)->load(
                     std::memory_order_relaxed)
             ? 1
             : 0;
}

}  // namespace

HttpClient::HttpClient(HttpRetry retry) : retry_(retry) {
  InitCurl();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

namespace {

// Why attempt `a` at `where` failed, and whether another may succeed.
absl::Status AttemptError(const std::string& url, const std::string& where,
                          const HttpClient::Attempt& a, bool* transient) {
  if (a.result == CURLE_OK) {
    *transient = TransientHttpCode(a.code);
    return *transient
               ? absl::UnavailableError(absl::StrCat(where, ": HTTP ", a.code))
               : HttpError(url, a.code);
  }
  *transient = TransientCurlError(a.result);
  return absl::UnavailableError(absl::StrCat(
      where, ": ", a.error[0] ? a.error : curl_easy_strerror(a.result)));
}

}  // namespace

void HttpClient::PauseBeforeRetry(absl::Duration wait) const {
  // In slices, so that a cancel is not kept waiting for a whole backoff.
  const absl::Time until = absl::Now() + wait;
  while (!Cancelled() && absl::Now() < until) {
    absl::SleepFor(std::min(until - absl::Now(), absl::Milliseconds(10)));
  }
}

absl::Duration HttpClient::Backoff(int failures) const {
  absl::Duration wait = retry_.first_backoff;
  for (int i = 1; i < failures && wait < retry_.max_backoff; ++i) wait *= 2;
  return std::min(wait, retry_.max_backoff);
}

void HttpClient::Perform(const std::string& url, bool head, Attempt* a) {
  CURL* curl = static_cast<CURL*>(curl_);
  // Reset keeps the handle's live connections: the next request reuses one.
  curl_easy_reset(curl);
  a->curl = curl;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  // A connection that moves no byte for 30 s is dead: fail (and retry)
  // rather than hang.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, a->error);
  if (cancel_ != nullptr) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, CheckCancel);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA,
                     const_cast<std::atomic<bool>*>(cancel_));
  }
  if (head) {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(curl, CURLOPT_FILETIME, 1L);
  } else {
    const std::string range = absl::StrCat(a->begin, "-", a->end - 1);
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    // Larger reads from the socket: fewer calls per megabyte.
    curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 256L << 10);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, a);
  }
  ++requests_;
  a->result = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a->code);
  if (head) {
    curl_off_t length = -1;
    curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    a->content_length = length;
    long modified = -1;
    curl_easy_getinfo(curl, CURLINFO_FILETIME, &modified);
    a->modified = modified;
  }
}

absl::StatusOr<HttpClient::Stat> HttpClient::Head(const std::string& url) {
  for (int failures = 0;;) {
    Attempt a;
    Perform(url, /*head=*/true, &a);
    if (Cancelled()) return absl::CancelledError(absl::StrCat("'", url, "'"));
    if (a.result == CURLE_OK && a.code == 200) {
      if (a.content_length < 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "'", url, "': the server gives no Content-Length for HEAD"));
      }
      return Stat{a.content_length, a.modified};
    }
    bool transient = false;
    absl::Status error =
        AttemptError(url, absl::StrCat("'", url, "'"), a, &transient);
    if (!transient) return error;
    if (++failures >= retry_.attempts) {
      return absl::UnavailableError(
          absl::StrCat(error.message(), " (", failures, " attempts)"));
    }
    ++retries_;
    PauseBeforeRetry(Backoff(failures));
  }
}

absl::Status HttpClient::Read(const std::string& url, int64_t offset,
                              int64_t length, std::string* out) {
  // Only ever grows: before C++20 a smaller reserve() may shrink (and move)
  // a buffer its caller keeps for reuse.
  if (out->capacity() < out->size() + length) {
    out->reserve(out->size() + length);
  }
  int64_t got = 0;
  for (int failures = 0; got < length;) {
    Attempt a;
    a.begin = offset + got;
    a.end = offset + length;
    a.out = out;
    Perform(url, /*head=*/false, &a);
    got += a.received;
    if (Cancelled()) return absl::CancelledError(absl::StrCat("'", url, "'"));
    if (a.done) return absl::OkStatus();
    if (a.code == 416) return absl::OkStatus();  // starts past the end
    if (a.result == CURLE_OK && (a.code == 200 || a.code == 206)) {
      // The answer was complete and shorter than asked: the file ends.
      return absl::OkStatus();
    }
    bool transient = false;
    absl::Status error = AttemptError(
        url,
        absl::StrCat("'", url, "' bytes ", offset, " to ", offset + length), a,
        &transient);
    if (!transient) return error;
    // A reset after some bytes is progress: only failures in a row count.
    if (a.received > 0) failures = 0;
    if (++failures >= retry_.attempts) {
      return absl::UnavailableError(
          absl::StrCat(error.message(), " (", failures, " attempts)"));
    }
    ++retries_;
    PauseBeforeRetry(Backoff(failures));
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
