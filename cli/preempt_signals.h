#ifndef ACTORFLOW_CLI_PREEMPT_SIGNALS_H_
#define ACTORFLOW_CLI_PREEMPT_SIGNALS_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/time/time.h"

namespace actorflow::internal::cli {

// SIGTERM and SIGUSR1, what Slurm, Kubernetes and spot instances send before
// they take a node away, as a request to preempt the job (net::Job::Preempt)
// rather than death. The handler only writes the signal's number to a pipe;
// a watcher thread does the rest. One instance at a time per process.
class PreemptSignals {
 public:
  // Installs the handlers: a signal from here on is remembered, even one
  // that comes before Watch.
  PreemptSignals();
  // Stop, then the default handlers back.
  ~PreemptSignals();
  PreemptSignals(const PreemptSignals&) = delete;
  PreemptSignals& operator=(const PreemptSignals&) = delete;

  // On the first signal: `preempt("SIGTERM")`; if Stop has not come `grace`
  // later, `late()`. Later signals change nothing.
  void Watch(std::function<void(const std::string&)> preempt,
             absl::Duration grace, std::function<void()> late);
  // Ends the watcher and joins it; before whatever its callbacks use goes.
  void Stop();

 private:
  void Loop(const std::function<void(const std::string&)>& preempt,
            absl::Duration grace, const std::function<void()>& late);

  int pipe_[2] = {-1, -1};
  std::thread watcher_;
};

}  // namespace actorflow::internal::cli

#endif  // ACTORFLOW_CLI_PREEMPT_SIGNALS_H_
