#include "runtime/progress_line.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace actorflow::internal {

ProgressLine::ProgressLine(const Session* session, std::FILE* out,
                           bool terminal, double delay_s, bool final_line)
    : session_(session),
      out_(out),
      terminal_(terminal),
      delay_s_(delay_s),
      final_line_(final_line) {}

void ProgressLine::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ProgressLine::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_.SignalAll();
  if (!thread_.joinable()) return;
  thread_.join();
  if (final_line_) {
    Show(/*last=*/true);
  } else if (shown_ && terminal_) {
    std::fputs("\r\033[K", out_);  // the line goes; the summary follows
    std::fflush(out_);
  }
}

std::string ProgressLine::Format(const RunProgress& progress) {
  const double seconds = progress.elapsed_ms / 1e3;
  const double rate = seconds > 0 ? progress.pieces_done / seconds : 0;
  std::string total = progress.pieces_total >= 0
                          ? absl::StrCat("/", progress.pieces_total)
                          : "";
  return absl::StrFormat("%d%s pieces, %.0f pieces/s, %.1f s",
                         progress.pieces_done, total, rate, seconds);
}

void ProgressLine::Show(bool last) {
  std::string line = absl::StrCat("progress: ", Format(session_->Progress()));
  if (terminal_) {
    std::fprintf(out_, "\r\033[K%s%s", line.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
  shown_ = true;
}

// Updates twice a second on a terminal, once a second elsewhere (a log).
void ProgressLine::Loop() {
  const auto period = std::chrono::milliseconds(terminal_ ? 500 : 1000);
  auto next = std::chrono::steady_clock::now() +
              std::chrono::microseconds(static_cast<int64_t>(delay_s_ * 1e6));
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!stop_ && std::chrono::steady_clock::now() < next) {
        wake_.WaitUntil(&mu_, next);
      }
      if (stop_) return;
    }
    Show(/*last=*/false);
    next += period;
  }
}

}  // namespace actorflow::internal
