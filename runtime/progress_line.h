#ifndef ACTORFLOW_RUNTIME_PROGRESS_LINE_H_
#define ACTORFLOW_RUNTIME_PROGRESS_LINE_H_

#include <cstdio>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "actorflow/session.h"
#include "base/mutex.h"

namespace actorflow::internal {

// The `actorflow run` progress line on stderr: pieces done (of how many),
// their rate and the time so far. On a terminal it rewrites one line in
// place and erases it at the end; elsewhere it writes one line per update.
// Its thread lives between Start and Stop (or destruction) and is joined.
class ProgressLine {
 public:
  // `session` must outlive this. `delay`: nothing is shown for runs shorter
  // than that (a forced line shows from the start and once more at the end).
  ProgressLine(const Session* session, std::FILE* out, bool terminal,
               double delay_s, bool final_line);
  ~ProgressLine() { Stop(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void Start();
  // Joins the thread; the final line (if asked for) shows the run's end.
  void Stop();

  // One line's text, e.g. "750/1000 pieces, 12345 pieces/s, 1.2 s".
  static std::string Format(const RunProgress& progress);

 private:
  void Loop();
  void Show(bool last);

  const Session* const session_;
  std::FILE* const out_;
  const bool terminal_;
  const double delay_s_;
  const bool final_line_;
  Mutex mu_;
  CondVar wake_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool shown_ = false;  // the loop thread's, then Stop's after the join
  std::thread thread_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_RUNTIME_PROGRESS_LINE_H_
