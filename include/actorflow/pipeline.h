#ifndef ACTORFLOW_PIPELINE_H_
#define ACTORFLOW_PIPELINE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actorflow/actor_stats.h"
#include "actorflow/checkpoint_info.h"
#include "actorflow/cuda_api.h"
#include "actorflow/proto/plan.pb.h"
#include "actorflow/run_trace.h"
#include "actorflow/skipped_sample.h"
#include "actorflow/tensor.h"
#include "actorflow/tensor_view.h"
#include "actorflow/version.h"

// A DALI-style data pipeline: operators (readers, decoders, augmentations,
// batching) declared in code, compiled to a Plan and run by a Session of
// its own. docs/pipelines.md lists the operators and how a pipeline maps
// onto actors, threads and registers.
//
// Ownership: a Pipeline owns its plan, session and threads; Finish or the
// destructor joins them all. A BatchView borrows registers of the pipeline
// and is valid until the next Outputs, ReleaseOutputs, Reset or Finish.
// Thread safety: one thread drives a pipeline (Build, Run, Outputs,
// FeedInput, Checkpoint, Restore, Finish); only Abort may come from any
// other. Errors are absl::Status naming the operator and the attribute.
namespace actorflow::internal::pipeline {
// The runtime's, outside the versioned namespace: what the pipeline's
// kernels point at.
class Autotuner;
class SampleDealers;
class SkipLog;
class LaneCursors;
struct LaneLayout;
}  // namespace actorflow::internal::pipeline

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

struct CheckpointData;
class KernelBindings;
class Session;

enum class OnError {
  kFail,        // a failing sample stops the pipeline
  kSkipSample,  // a sample that fails to read or decode is dropped
};

struct PipelineOptions {
  int64_t batch_size = 32;
  // CPU worker threads: each per-sample operator runs as one actor per
  // worker, and worker w takes the samples at positions p with p % n == w.
  int num_threads = 1;
  // Batches the producer may be ahead of the consumer: the register_num of
  // every stage's output on the host...
  int prefetch_depth = 2;
  // ... and on the device (0: the same as prefetch_depth).
  int gpu_prefetch_depth = 0;
  uint64_t seed = 0;
  OnError on_error = OnError::kFail;
  // How long an idle stage thread spins before it sleeps. A pipeline's
  // stages act per batch, milliseconds apart, and its threads share the
  // cores with the decoders: spinning would only take cycles from them.
  int64_t spin_ns = 0;
  // Record every act (Pipeline::trace()).
  bool trace = false;
  // Time every stage's acts and waits (Pipeline::Stats()): a few clock
  // reads per batch and stage.
  bool stats = true;
  // Build restores the pipeline from this checkpoint (see Restore).
  std::string restore_from;
  // Run a decode followed (in one chain) by resize and/or crop as one step
  // that decodes a JPEG at the smallest DCT scale still covering the
  // resize's target, and only the rows and columns the crop keeps. Crops
  // of unresized images come out identical; resized ones differ from the
  // unfused chain by the DCT scaling's rounding (pipeline_ops_test states
  // the bounds). Also a chain's last crop_mirror_normalize is run by the
  // batch, writing each row once (the same values; docs/pipelines.md,
  // "Writing the batch once"). false: every operator as written.
  bool fuse_decode = true;
  // Which CUDA devices are usable (tests pass their own).
  DeviceProbe probe = cuda::DeviceAvailable;
  // Choose num_threads and prefetch_depth while running, from the images/s
  // the caller gets (Pipeline::Autotune(); docs/pipelines.md, "At scale"):
  // neither changes a batch. num_threads and prefetch_depth above are where
  // it starts.
  bool autotune = false;
  // The most worker threads it tries (0: the CPUs this process may use).
  int autotune_cpus = 0;
  // The memory the pipeline may add to the process's resident set, in
  // bytes (0: no limit): configurations predicted to pass it are not tried.
  int64_t autotune_memory_bytes = 0;
};

// One configuration the tuner ran for a window of batches.
struct AutotuneTrial {
  int threads = 0;
  int depth = 0;
  double images_per_s = 0;   // samples per second as the caller took them
  int64_t memory_bytes = 0;  // resident memory above the pipeline's start
};

// Where the tuner stands (Pipeline::Autotune).
struct AutotuneReport {
  bool enabled = false;
  int threads = 0;  // running now
  int depth = 0;
  bool settled = false;           // it has chosen and tries nothing more
  int64_t batches_to_settle = 0;  // batches taken when it settled
  std::vector<AutotuneTrial> trials;
};

// One operator: `op` is what it does ("file_reader", "decode", ...), its
// inputs and outputs are named data nodes (an input names an earlier
// operator's output), `device` is "cpu", "mixed" (made on the host, handed
// on in device memory: the batch) or "gpu".
struct OperatorDef {
  std::string op;
  // The operator's name in errors and in the plan (default: its first
  // output).
  std::string name;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string device = "cpu";
  std::map<std::string, AttrValue> attrs;
};

// One stage of a pipeline over a window (Pipeline::Stalls): the share of
// the window its threads spent in its work (busy), waiting for an input
// (starved: what feeds it is slow) and for a free output (back-pressured:
// what reads it is slow), each the mean over its threads, 0..1.
struct StageStalls {
  int threads = 0;
  int64_t acts = 0;
  // Samples the stage's threads went through per second of the window (its
  // acts, a batch's worth of samples each).
  double samples_per_s = 0;
  double busy = 0;
  double starved = 0;
  double back_pressured = 0;
  // The memory its registers hold at the window's end: every thread's
  // output registers and the samples they point to (TaskStats::
  // register_bytes).
  int64_t register_bytes = 0;
};

// Where a running pipeline stalls, since the last Stalls() (the first: since
// Build). `caller_wait`: the share of the window the caller spent waiting in
// Outputs for a batch. `verdict`: one line, "input-bound 38 %: decode, 2 of
// 2 threads busy 98 %" (the stage whose threads are busiest), or "input is
// not the bottleneck: the caller waited 2 % of the time" (under 5 %).
struct PipelineStalls {
  double window_ms = 0;
  int64_t batches = 0;
  double batches_per_s = 0;
  double samples_per_s = 0;
  double caller_wait = 0;
  std::map<std::string, StageStalls> stages;  // by stage: "decode+crop"
  std::string verdict;
};

// One output of a batch, borrowed from the pipeline.
class OutputView {
 public:
  const std::string& name() const { return name_; }
  // [n, max_shape...]: sample i in box i, zero-padded where it is smaller.
  ConstTensorView data() const { return data_; }
  int64_t num_samples() const { return data_.shape()[0]; }
  // int64 [n, rank]: row i is sample i's own shape.
  ConstTensorView shapes() const { return shapes_; }
  // Sample i's own shape.
  absl::Span<const int64_t> sample_shape(int64_t i) const;

 private:
  friend class Pipeline;
  std::string name_;
  ConstTensorView data_;
  ConstTensorView shapes_;
};

struct BatchView {
  int64_t epoch = 0;
  int64_t index = 0;  // in its epoch
  std::vector<OutputView> outputs;
  // The output of that name; an error naming the outputs there are.
  absl::StatusOr<OutputView> output(absl::string_view name) const;
};

// One output of a batch the caller owns (Pipeline::TakeOutputs).
struct TakenOutput {
  std::string name;
  // [n, max_shape...], as OutputView::data(), valid while data.owner lives.
  TakenTensor data;
  Tensor shapes;  // int64 [n, rank], as OutputView::shapes()
};

struct TakenBatch {
  int64_t epoch = 0;
  int64_t index = 0;  // in its epoch
  std::vector<TakenOutput> outputs;
};

class Pipeline {
 public:
  explicit Pipeline(PipelineOptions options);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Declaring. Problems are reported by Build, naming the operator.
  Pipeline& Add(OperatorDef def);
  // The data nodes handed out as batches, in this order.
  Pipeline& SetOutputs(std::vector<std::string> names);

  // Checks everything, compiles the plan (shape inference included) and
  // starts its threads. Every problem found is reported, one per line.
  absl::Status Build();
  // The compiled plan: validate it, print it, write it out.
  const Plan& plan() const;
  // Samples per epoch of this shard; -1 with an external source.
  int64_t epoch_size() const { return epoch_size_; }
  // Samples in the reader's whole dataset (every shard, no padding); -1
  // with an external source.
  int64_t dataset_size() const { return dataset_size_; }

  // Schedules one more batch. Never blocks: the pipeline computes at most
  // prefetch_depth chunks ahead of what the caller has taken.
  absl::Status Run();
  // Releases the batch held by the last Outputs (if any), then waits for
  // the next scheduled batch. Its views are valid until the next Outputs,
  // ReleaseOutputs, Reset or the pipeline's end. OutOfRange at the end of
  // the epoch.
  absl::StatusOr<BatchView> Outputs();
  // Zero-copy control: take the next batch without releasing any, and
  // release the oldest one held. At most prefetch_depth may be held.
  absl::StatusOr<BatchView> ShareOutputs();
  absl::Status ReleaseOutputs();
  // Releases every batch held, then hands the next over to the caller, to
  // keep as long as it likes: each output's buffer itself where it can
  // (the batch stage then assembles into memory recycled from batches the
  // caller dropped), a copy where it cannot. OutOfRange at the end of the
  // epoch, as Outputs.
  absl::StatusOr<TakenBatch> TakeOutputs();
  // A batch for external source `name` ([n, sample shape...], n <= batch
  // size), consumed by the next Run. `shapes` (int64 [n, rank], optional)
  // gives each sample's own shape: sample i is the box of that shape at the
  // start of batch row i. Without it every sample has the row's shape. With
  // several external sources a batch is scheduled once each has been fed
  // one, all of the same n.
  absl::Status FeedInput(absl::string_view name, const Tensor& batch,
                         const Tensor* shapes = nullptr);
  // Drops what is scheduled or held and starts the next epoch.
  absl::Status Reset();

  // Checkpoints (docs/checkpoints.md). Saves the pipeline as the
  // caller sees it: the batches after the cut are the ones it would hand
  // out next, the prefetched ones included (they go into the checkpoint as
  // they are), then the reader's place in its epoch, the shuffle and the
  // augmentations' random state (both follow from the seed, the epoch and
  // the sample's place) and any samples held over for the next batch.
  // Batches the caller holds are its own. Refused while batches fed to an
  // external source wait for their Run(), or while the caller holds every
  // prefetched batch (ReleaseOutputs first).
  absl::StatusOr<CheckpointInfo> Checkpoint(
      const std::string& root, const CheckpointOptions& options = {});
  // After Build, before the first Run or FeedInput: the state of the
  // checkpoint in `dir` (a checkpoint, or the newest under a root). A
  // checkpoint of another pipeline is refused; one of this pipeline at
  // another num_threads is not (nor at another prefetch depth that holds
  // the batches it had prefetched). The next
  // batches are those the checkpointed pipeline would have handed out
  // next; an external source is fed from where its checkpoint left off.
  absl::StatusOr<CheckpointInfo> Restore(const std::string& dir);
  // An elastic pipeline (a reader with attr `elastic`; docs/pipelines.md,
  // "At scale") checkpoints only its place: the epoch, the batches handed
  // out and the samples skipped in its lanes, a few bytes per skip, no
  // sample data. It resumes from the checkpoint directories of every rank
  // of the run that wrote them, at any number of ranks and threads: `dirs`
  // (roots, one per old rank, in any order) are searched for the newest
  // batch that every one of them has a checkpoint of. The global batches
  // after it are those of an uninterrupted run. `user` is the first
  // directory's. An error names a rank's checkpoint that is missing, of
  // another pipeline or of another global batch size.
  absl::StatusOr<CheckpointInfo> Restore(const std::vector<std::string>& dirs);

  // Any thread: stops the pipeline with `status`, as an operator's error
  // would; a blocked Outputs wakes and returns it. Callers interrupted by
  // the user (Python's Ctrl-C) use it.
  void Abort(absl::Status status);

  // Ends the pipeline's run: drops what is scheduled or held, lets the
  // plan drain and joins its work; trace() then holds every act since
  // Build. Afterwards the pipeline refuses work.
  absl::Status Finish();

  int64_t epoch() const { return epoch_; }
  // Batches handed out in this epoch (after a Restore: those handed out
  // before the checkpoint), so the next batch's index.
  int64_t batches() const { return batches_; }
  // Chunks (a batch's worth of samples) the reader has read since Build:
  // never more than prefetch_depth ahead of the batches taken.
  int64_t chunks_read() const {
    return chunks_read_.load(std::memory_order_relaxed);
  }
  // Samples dropped by on_error=skip_sample since Build, in order.
  std::vector<SkippedSample> skipped() const;
  // The first error; OK while the pipeline works.
  absl::Status status() const { return error_; }
  // With PipelineOptions::trace, after Finish: every act of the plan.
  const RunTrace& trace() const;
  // With PipelineOptions::stats, any time after Build: per task of the
  // plan (an operator, or the fused chain of them a stage runs, named as
  // in plan()), its acts, the time in them (busy), the time it waited for
  // an input (starved: what feeds it is slow) and for a free output
  // register (back-pressured: what reads it is slow), since Build.
  absl::StatusOr<std::map<std::string, TaskStats>> Stats() const;
  // With PipelineOptions::stats, any time after Build, from the thread that
  // takes the batches: where the pipeline stalled since the last call (see
  // PipelineStalls). Costs what Stats costs; nothing between calls.
  absl::StatusOr<PipelineStalls> Stalls();
  // The tuner's trials and choice (PipelineOptions::autotune).
  AutotuneReport Autotune() const;

 private:
  class Compiler;  // pipeline_compiler.cc
  // The feed of chunks that Pump issues and every source reads.
  static constexpr char kScheduleTask[] = "schedule";
  struct Ref;
  struct Node;
  struct Held;
  struct OwnedTensor;
  // A batch out of the plan into memory of its own, its registers released.
  static std::unique_ptr<Held> CopyOut(const Held& held);
  // The session's part of Restore: a checkpoint of this pipeline at other
  // num_threads is matched by the pipeline's definition, not by its plan.
  absl::StatusOr<CheckpointInfo> RestoreSession(const std::string& dir);
  // The elastic forms of Checkpoint and Restore
  // (pipeline_elastic_checkpoint.cc).
  absl::StatusOr<CheckpointInfo> CheckpointLanes(
      const std::string& root, const CheckpointOptions& options);
  absl::StatusOr<CheckpointInfo> RestoreLanes(
      const std::vector<std::string>& dirs);
  absl::Status CanRestore() const;
  // Writes `data` under `root` (keeping keep_last) and reports it; the
  // pause counts from `started_ns`.
  static absl::StatusOr<CheckpointInfo> Write(const std::string& root,
                                              const CheckpointData& data,
                                              int keep_last,
                                              int64_t started_ns);
  // The tuner's step before a batch is taken (pipeline_autotune.cc): ends
  // a measuring window when one is full and moves to the configuration
  // the tuner names next.
  absl::Status TuneStep();
  void StartTuner();
  // Creates session_ for plan_, its kernels bound to this pipeline's.
  absl::Status StartSession();
  // Rebuilds the plan and session at `threads` and `depth` at a cut: what
  // is in flight is taken out first (as Checkpoint does) and the kernels'
  // state carried over in memory, so the batches go on unchanged.
  absl::Status Reconfigure(int threads, int depth);
  // Writes the pipeline as a job (one operator per worker and stage) and
  // compiles it into plan_ (pipeline_compiler.cc).
  absl::Status Compile();
  // The pipeline's own kernels (they point at its dealers, log and
  // counter), for the compiler and the session.
  void BindKernels(KernelBindings* kernels);
  absl::Status Fail(absl::Status status);
  absl::Status Usable() const;
  // ShareOutputs without its bookkeeping for Stalls().
  absl::StatusOr<BatchView> NextOutputs();
  absl::Status Pump();
  static absl::Status CheckSampleShapes(absl::string_view name,
                                        const Tensor& batch,
                                        const Tensor& shapes);
  // Releases what is held and fetches (and drops) what is in flight.
  absl::Status Drain();
  // The next piece in flight (true: it has rows).
  absl::StatusOr<bool> FetchOne(Held* held);
  // Whether a piece of chunk `chunk` fetched with (`full`) or without rows
  // is a batch to hand out. Without rows: every sample was held over for
  // the next batch; or, elastic, before the rank's last samples came, a
  // lane still waits (counted in not_ready_: one more chunk is issued),
  // and from then on it is the epoch's last batch with no rows left.
  bool CountsAsBatch(int64_t chunk, bool full);
  // Every piece in flight out of the plan into memory of its own (ready_,
  // which goes out first): the plan comes to rest.
  absl::Status DrainInFlight();
  bool MoreToIssue() const;

  PipelineOptions options_;  // num_threads, prefetch_depth: the tuner's
  std::vector<OperatorDef> ops_;
  std::vector<std::string> output_names_;
  std::vector<std::string> declare_errors_;
  Plan plan_;
  // What the session's kernels point at: declared before it, so they
  // outlive it.
  std::unique_ptr<internal::pipeline::SkipLog> log_;
  std::unique_ptr<internal::pipeline::SampleDealers> dealers_;
  std::unique_ptr<internal::pipeline::LaneCursors> cursors_;
  std::atomic<int64_t> chunks_read_{0};
  std::unique_ptr<Session> session_;

  absl::Status error_;
  bool built_ = false;

  struct ExternalSource {
    std::string name;
    std::string feed;        // its feed task
    std::string shape_feed;  // and that of its samples' shapes
    // Sample counts of the batches fed and not yet scheduled, oldest first.
    std::deque<int64_t> fed;
  };
  std::vector<ExternalSource> externals_;
  int64_t epoch_size_ = 0;
  int64_t dataset_size_ = 0;
  int64_t chunks_per_epoch_ = 0;
  // An elastic reader's lanes (null: none).
  std::unique_ptr<internal::pipeline::LaneLayout> lanes_;
  int depth_ = 2;
  // This epoch.
  int64_t epoch_ = 0;
  int64_t next_chunk_ = 0;
  int64_t in_flight_ = 0;  // chunks issued, not yet fetched
  int64_t requested_ = 0;  // Run()s not yet answered by a batch
  int64_t delivered_ = 0;  // samples handed out
  int64_t batches_ = 0;
  // Elastic: pieces of zero rows that were no batch (a lane waiting for a
  // sample after skips), each calling for one more chunk.
  int64_t not_ready_ = 0;
  // Since Build, for Stalls(): what Outputs handed out and how long the
  // caller waited in it; and where the last Stalls() window ended.
  int64_t taken_batches_ = 0;
  int64_t taken_samples_ = 0;
  int64_t caller_wait_ns_ = 0;
  int64_t stalls_since_ns_ = 0;
  int64_t stalls_batches_ = 0;
  int64_t stalls_samples_ = 0;
  int64_t stalls_wait_ns_ = 0;
  std::map<std::string, TaskStats> stalls_stats_;
  // The tuner (null unless autotune) and its window: where it started
  // (batches taken, samples, time) and the resident memory at Build.
  std::unique_ptr<internal::pipeline::Autotuner> tuner_;
  int64_t tune_window_batches_ = 0;
  int64_t tune_window_samples_ = 0;
  int64_t tune_window_ns_ = 0;
  int64_t tune_warmup_ = 0;  // batches to let pass before a window opens
  int64_t tune_settled_at_ = 0;
  int64_t rss_at_build_ = 0;
  std::deque<std::unique_ptr<Held>> held_;
  // Batches made and not yet handed out, in memory of their own: taken out
  // of the plan by a Checkpoint, or given back by a Restore. They go out
  // before anything the plan makes next.
  std::deque<std::unique_ptr<Held>> ready_;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_PIPELINE_H_
