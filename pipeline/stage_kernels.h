#ifndef ACTORFLOW_PIPELINE_STAGE_KERNELS_H_
#define ACTORFLOW_PIPELINE_STAGE_KERNELS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/kernel.h"
#include "base/mutex.h"
#include "pipeline/augment.h"
#include "pipeline/caffe_lmdb.h"
#include "pipeline/dataset.h"
#include "pipeline/elastic_lanes.h"
#include "pipeline/multi_sample_op.h"
#include "pipeline/recordio.h"
#include "pipeline/remote_prefetch.h"
#include "pipeline/sample_dealer.h"
#include "pipeline/sample_function.h"
#include "pipeline/sample_list.h"
#include "pipeline/sample_ops.h"
#include "pipeline/skip_log.h"
#include "pipeline/tar_index.h"
#include "pipeline/tfrecord.h"
#include "proto/tf_example.pb.h"

// The kernels a pipeline's plan runs (op_types "pipeline.<operator>"):
// readers (sources driven by the schedule feed), per-sample stages, and
// batch assembly. Registered globally too, so `actorflow validate` checks a
// pipeline's written-out plan.
namespace actorflow::internal::pipeline {

// A reader: one piece per scheduled chunk, holding that chunk's samples
// (batch_size of them, fewer at the end of the epoch) under its output
// names.
class ReaderKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
  // Samples in this shard: one epoch.
  int64_t epoch_size() const { return epoch_size_; }
  // How many outputs it may have (the data and a label, by default).
  virtual size_t max_outputs() const { return 2; }
  // After Init: the largest sample of output k in bytes, -1 if unknown.
  virtual int64_t LargestSample(int k) const { return -1; }
  // Samples in the whole dataset, before sharding and padding.
  int64_t dataset_size() const { return dataset_size_; }
  // After Open: the runs of samples that shard and shuffle as units (see
  // ShardPlan), or empty: each sample alone.
  virtual std::vector<int64_t> ShuffleGroups() const { return {}; }
  // Counts each chunk read into `counter` (after the chunk is complete).
  void CountChunksInto(std::atomic<int64_t>* counter) { counter_ = counter; }
  // With attr `elastic`: the global schedule this rank (shard_id of
  // num_shards) reads its lanes of (elastic_lanes.h); else null.
  const LaneLayout* lanes() const { return elastic_ ? &lanes_ : nullptr; }

 protected:
  // Reads the dataset's description (not its data) and returns its size.
  virtual absl::StatusOr<int64_t> Open(const KernelInitContext& ctx) = 0;
  // Output `k` (0: the data, 1: the label) of dataset sample `index`.
  // May leave a file unread, setting *lazy (see SampleHeader::lazy_file).
  virtual absl::Status Fill(int64_t index, int k, SampleSlots::Slot* slot,
                            bool* lazy) = 0;
  // Before a piece is filled: the dataset indices of the samples the
  // epoch's order reaches by the end of it (what its shuffle window holds
  // then), in the order they enter the window, each position once per
  // epoch, leaving out those a resumed epoch gave before it stopped. A
  // reader of remote data fetches them here, in that order, ahead of Fill.
  virtual absl::Status Upcoming(int64_t epoch,
                                const std::vector<int64_t>& indices) {
    return absl::OkStatus();
  }
  // How many pieces beyond the window Upcoming should see coming (into the
  // next epoch near the end of one): a reader that fetches on another
  // thread asks for a head start. 0: Upcoming is not called.
  virtual int64_t pieces_ahead() const { return 0; }
  // The epoch of the piece being filled (for Fill).
  int64_t filling_epoch() const { return filling_epoch_; }
  const std::vector<std::string>& outputs() const { return outputs_; }

 private:
  std::vector<std::string> outputs_;
  int64_t batch_size_ = 1;
  std::unique_ptr<ShardPlan> shards_;
  int64_t epoch_size_ = 0;
  int64_t dataset_size_ = 0;
  int64_t window_ = 0;
  uint64_t seed_ = 0;
  bool skip_errors_ = false;
  std::atomic<int64_t>* counter_ = nullptr;
  int64_t order_epoch_ = -1;
  std::vector<int64_t> order_;
  // An elastic reader's next epoch's order, made once for the head start
  // (AnnounceLanes) and taken over when that epoch begins.
  int64_t ahead_order_epoch_ = -1;
  std::vector<int64_t> ahead_order_;
  // Given to Upcoming: every position of the epochs before
  // announce_epoch_, and [0, announced_) of it.
  absl::Status AnnounceUpcoming(int64_t epoch, int64_t first, int64_t last);
  // The same for an elastic reader: each of its positions once per epoch,
  // in chunk order, from chunk `chunk` to pieces_ahead() chunks past it.
  absl::Status AnnounceLanes(int64_t epoch, int64_t chunk);
  // This rank's positions in chunk `chunk` (elastic), in order.
  std::vector<int64_t> LanePositions(int64_t chunk) const;
  bool elastic_ = false;
  LaneLayout lanes_;
  int64_t announce_epoch_ = -1;
  int64_t announced_ = 0;
  int64_t filling_epoch_ = 0;
  SampleSlots slots_;
};

// `pipeline.file_reader`: attr `dir` (a directory), `files` (paths, with
// optional `labels`) or `file_list` (a text file). Outputs: the encoded
// file (uint8 [bytes]) and optionally its label (int32 scalar).
class FileReaderKernel final : public ReaderKernel {
 public:
  // Output 0: the largest listed file's size in bytes (a stat of every
  // file, so asked for only where a batch of the bytes needs its box);
  // files that cannot be stat'ed now are left out (their read fails
  // later); -1 if none can.
  int64_t LargestSample(int k) const override;

 protected:
  absl::StatusOr<int64_t> Open(const KernelInitContext& ctx) override;
  absl::Status Fill(int64_t index, int k, SampleSlots::Slot* slot,
                    bool* lazy) override;

 private:
  std::vector<FileEntry> files_;
};

// `pipeline.idx_reader`: attrs `images` and `labels`, IDX files (gzip or
// not). Outputs: the image (uint8 [rows, cols, 1]) and optionally the label
// (int32 scalar). The data is loaded at the first piece, not at Init.
class IdxReaderKernel final : public ReaderKernel {
 protected:
  absl::StatusOr<int64_t> Open(const KernelInitContext& ctx) override;
  absl::Status Fill(int64_t index, int k, SampleSlots::Slot* slot,
                    bool* lazy) override;

 private:
  absl::Status Load();
  std::string images_path_;
  std::string labels_path_;
  bool loaded_ = false;
  IdxArray images_;
  IdxArray labels_;
};

// `pipeline.webdataset_reader`: attrs `paths` (tar files: local paths or
// http(s):// URLs), `ext` (one entry per output: a component's extensions,
// alternatives separated by ';'), `missing_component_behavior` ("empty": a
// sample without the component gives an empty one (the default), "skip":
// such samples are left out, "error": the reader refuses them), `dtypes`
// (one per output, "uint8" by default: the component's bytes read as that
// type, 1-D); for URLs `read_ahead_bytes` (64 MiB: the most sample bytes
// fetched ahead of use, in the order samples enter the shuffle window) and
// `http_attempts` (6: tries per request before the read fails). A member
// cut off by the end of a truncated file is an error of that sample, named
// like a corrupt file (and skipped with skip_errors).
class WebDatasetReaderKernel final : public ReaderKernel {
 public:
  size_t max_outputs() const override { return 64; }
  int64_t LargestSample(int k) const override;
  // Each tar file is a unit: ranks get whole files, shuffling moves them.
  std::vector<int64_t> ShuffleGroups() const override { return per_file_; }
  // Two pieces: the next piece's samples are in flight while this one is
  // filled.
  int64_t pieces_ahead() const override { return remote_ ? 2 : 0; }

 protected:
  absl::StatusOr<int64_t> Open(const KernelInitContext& ctx) override;
  absl::Status Fill(int64_t index, int k, SampleSlots::Slot* slot,
                    bool* lazy) override;

 private:
  std::vector<std::vector<std::string>> exts_;  // per output
  std::vector<DataType> types_;                 // per output
  std::vector<TarSample> samples_;
  std::vector<int64_t> per_file_;  // samples of each tar file, in order
  std::unique_ptr<ShardFiles> files_;
  bool remote_ = false;                           // some shard is a URL
  std::unique_ptr<RemotePrefetcher> prefetcher_;  // for remote shards

  // Remote samples fetched ahead by Upcoming, until Fill takes them: at
  // most about read_ahead_bytes_ (the rest is read when filled).
  absl::Status Upcoming(int64_t epoch,
                        const std::vector<int64_t>& indices) override;
  // A component's bytes within a fetched run, which its samples share.
  struct Fetched {
    std::shared_ptr<RemotePrefetcher::Run> run;
    int64_t at = 0, size = 0;
  };
  // Output k of sample `index`, from `fetched` if not null.
  absl::Status FillComponent(int64_t index, int k, const Fetched* fetched,
                             SampleSlots::Slot* slot);
  struct Ahead {
    std::vector<Fetched> outputs;  // per output; empty until fetched
    bool fetched = false;
    // Per epoch, uses announced and not yet filled (a padded shard repeats
    // its last sample; the next epoch's first samples are announced before
    // this one ends).
    std::map<int64_t, int> uses;
    int taken = 0;  // outputs filled of the current use
  };
  std::map<int64_t, Ahead>::iterator DropAhead(
      std::map<int64_t, Ahead>::iterator it);
  std::map<int64_t, Ahead> ahead_;
  int64_t ahead_bytes_ = 0;
  int64_t purged_epoch_ = -1;
  int64_t read_ahead_bytes_ = 0;
};

// `pipeline.caffe_reader`: attr `path` (a Caffe LMDB: its directory, or
// its data.mdb), `image_available` and `label_available` (true): which of
// the two outputs there are, in that order. The image is a datum's encoded
// bytes (uint8 [bytes]), or, when the first record's `encoded` is false,
// its raw data as uint8 [height, width, channels] (every record then the
// same shape); the label an int32 scalar.
class CaffeReaderKernel final : public ReaderKernel {
 public:
  int64_t LargestSample(int k) const override;
  // The image output's shape when the records are raw; empty if encoded.
  const std::vector<int64_t>& raw_shape() const { return raw_shape_; }

 protected:
  absl::StatusOr<int64_t> Open(const KernelInitContext& ctx) override;
  absl::Status Fill(int64_t index, int k, SampleSlots::Slot* slot,
                    bool* lazy) override;

 private:
  static constexpr int64_t kUnread = int64_t{1} << 40;
  std::string path_;
  std::unique_ptr<CaffeLmdb> db_;
  bool image_ = true;
  bool label_ = true;
  std::vector<int64_t> raw_shape_;
  // Each record's label once its image was read (kUnread before), so that
  // the label output does not parse the record again.
  std::vector<int64_t> labels_;
};

// `pipeline.tfrecord_reader`: attr `paths` (TFRecord files), and per output
// one feature of each record's tf.train.Example: `features` (names),
// `kinds` ("bytes", "int64", "float32"), `shapes` ("" a scalar, "2,3" a
// fixed shape, "var" every value as a vector; bytes only scalar: the first
// value's bytes as uint8 [bytes]) and `defaults` (a fixed-shape numeric
// feature a record lacks is filled with its default; a missing bytes
// feature is empty, a missing "var" one has no value).
class TfRecordReaderKernel final : public ReaderKernel {
 public:
  size_t max_outputs() const override { return 64; }
  int64_t LargestSample(int k) const override;
  // Output k's element type and shape (-1: "var", up to LargestSample).
  DataType type(int k) const { return features_[k].type; }
  const std::vector<int64_t>& shape(int k) const { return features_[k].shape; }

 protected:
  absl::StatusOr<int64_t> Open(const KernelInitContext& ctx) override;
  absl::Status Fill(int64_t index, int k, SampleSlots::Slot* slot,
                    bool* lazy) override;

 private:
  struct Feature {
    std::string name;
    DataType type = DT_UINT8;
    std::vector<int64_t> shape;  // {-1}: var-len
    double fallback = 0;
  };
  std::vector<Feature> features_;
  std::unique_ptr<TfRecordFiles> files_;
  // The last record parsed: the outputs of one sample share it.
  int64_t parsed_ = -1;
  actorflow::pipeline::TfExample example_;
};

// `pipeline.recordio_reader`: the images and labels of MXNet RecordIO
// files (attr `paths`, pipeline/recordio.h), outputs the image's bytes
// (uint8) and its labels (float32 [1], or [flag] where the record holds
// `flag` labels).
class RecordIoReaderKernel final : public ReaderKernel {
 public:
  int64_t LargestSample(int k) const override;

 protected:
  absl::StatusOr<int64_t> Open(const KernelInitContext& ctx) override;
  absl::Status Fill(int64_t index, int k, SampleSlots::Slot* slot,
                    bool* lazy) override;

 private:
  std::unique_ptr<RecordIoFiles> files_;
  // The last record read: a sample's two outputs share it.
  int64_t read_ = -1;
  std::string image_;
  std::vector<float> labels_;
};

// `pipeline.external_source`: each piece splits the batch fed to its
// "data" input ([n, sample shape...]) into n samples of output `outputs[0]`.
class ExternalSourceKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 private:
  std::string output_;
  int64_t batch_size_ = 1;
  SampleSlots slots_;
};

// `pipeline.arith`, `pipeline.cat`, `pipeline.stack`, `pipeline.function`:
// one worker's samples of several per-sample nodes combined, sample by
// sample: arith (two operands, attr `op`: "add", "sub", "mul", "div"; see
// Arith), cat and stack (one or more, attr `axis`; see Concatenate), and
// function (one or more, attr `function`: a SampleFunction's id; one or
// more outputs). Attr `outputs`: the output sample lists' names. Attr
// `operands`: each operand's sample list blob, found in whichever input
// holds it (operands of one node share a register, which the task
// consumes once); every operand holds the samples that worker took, in the
// same order. `deals`, one per operand: "static" for a source's register,
// holding every sample, of which the worker takes those at p % workers ==
// worker (attrs `worker`, `workers`), as its stages do; else "all". A
// sample dropped in any operand is dropped in every output, with its
// error. `pipeline.random_bbox_crop`, `pipeline.box_encoder`,
// `pipeline.slice_at` and `pipeline.decode_slice` (MultiSampleOp) draw from
// each sample's SampleRng (attrs `seed`, `op_index`).
class CombineStageKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 private:
  struct Operand {
    std::string blob;
    int input = 0;       // the kernel input whose register holds it
    bool dealt = false;  // a source's register: p % workers
    Sample file;         // a lazily read file's bytes
  };
  absl::Status Combine(const SampleHeader& h, absl::Span<const SampleRef> parts,
                       absl::Span<Sample> outs) const;

  bool is_arith_ = false;
  std::unique_ptr<MultiSampleOp> multi_;
  uint64_t seed_ = 0, op_index_ = 0;  // the multi op's SampleRng
  std::shared_ptr<const SampleFunction> function_;
  ArithOp arith_ = ArithOp::kAdd;
  int64_t axis_ = 0;
  bool stack_ = false;
  std::vector<Operand> operands_;
  std::vector<std::string> outputs_;
  std::vector<Sample> results_;  // scratch, swapped into the slots
  std::string op_name_;
  bool skip_errors_ = false;
  int64_t worker_ = 0, workers_ = 1;
  SampleSlots slots_;
};

// `pipeline.<op>` for each SampleOp, and `pipeline.chain`: a worker's run
// of per-sample operators fused into one actor (attrs `ops`, `op_names`,
// `op_indices`; operator j's own attributes prefixed "<j>."). Each sample
// goes through every operator in turn, between them in two scratch buffers
// of the worker's own, and only the last operator's result is written to
// the register. Reads input blob `input`, writes `output`. Which samples
// (attr `deal`):
//   "static"   those at positions p with p % workers == worker (default)
//   "dynamic"  those this worker claims first from the stage's dealer
//              (static when the kernel has no dealers: outside a Pipeline)
//   "all"      every one (a later stage of the same worker)
// With attr `fuse_decode` (the Pipeline sets it from
// PipelineOptions::fuse_decode), a chain's decode followed by resize and/or
// crop runs as one fused step (decode_resize, decode_random_crop) that
// decodes a JPEG at a reduced DCT scale and only the region kept. With attr
// `finish_in_batch`, the last operator (one whose SampleOp finishes in a
// batch) is only checked on each sample; the batch applies it as it places
// the sample (BatchKernel's `finish_ops`).
class SampleStageKernel final : public Kernel {
 public:
  explicit SampleStageKernel(SampleDealers* dealers) : dealers_(dealers) {}
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 private:
  struct Step {
    std::unique_ptr<SampleOp> op;
    std::string name;      // the operator's, for errors
    int64_t op_index = 0;  // seeds its randomness
  };
  absl::Status InitSteps(const KernelInitContext& ctx);
  // Every step on one sample; on error, failed_step_ says which failed.
  absl::Status Apply(const SampleHeader& h, Sample* out);

  std::vector<Step> steps_;
  Sample file_;  // a lazily read file's bytes
  Sample scratch_[2];
  size_t failed_step_ = 0;
  bool read_failed_ = false;
  std::string input_;
  std::string output_;
  int64_t worker_ = 0;
  int64_t workers_ = 1;
  SampleDealers* dealers_;
  SampleDealer* dealer_ = nullptr;  // when dealing dynamically
  bool take_all_ = false;
  uint64_t seed_ = 0;
  bool skip_errors_ = false;
  bool finish_in_batch_ = false;
  SampleSlots slots_;
};

// `pipeline.batch`: assembles each output's samples, in epoch order, into
// one tensor [n, max_shape...] (a sample smaller than max_shape sits at the
// start of its box, zero-padded) plus [n, rank] per-sample shapes, in
// registers "out_<name>" and "shape_<name>". A position dropped in any
// output is dropped from all; batches are then filled from later chunks, so
// every batch but an epoch's last has batch_size samples, and a chunk that
// completes none makes an empty piece (n = 0). Attr `finish_ops` (one name
// per output, "" for none; with `finish_op_names`, `finish_op_indices`,
// `seed`, and op k's attributes as "finish.<k>.<attr>"): the last operator
// of output k's chain, which the chain only checks (its
// `finish_in_batch`), applied here as each sample is placed, its values
// written once, into the batch.
class BatchKernel final : public Kernel {
 public:
  explicit BatchKernel(SkipLog* log = nullptr,
                       const LaneCursors* cursors = nullptr)
      : log_(log), cursors_(cursors) {}
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
  // The samples held over for the next batch: "backlog_epoch" (int64),
  // "held" (int64: how many) and "held.<i>.<k>", sample i of output k. (An
  // elastic pipeline checkpoints without the session: none.)
  bool has_state() const override { return true; }
  absl::Status SaveState(const KernelStateContext& ctx,
                         KernelState* state) override;
  absl::Status RestoreState(const KernelStateContext& ctx,
                            const KernelState& state) override;

 private:
  struct Output {
    std::string name;
    SampleSpec spec;
    std::vector<int> inputs;  // indices of the registers that carry it
    // Its finishing operator (attr `finish_ops`), or null.
    std::unique_ptr<SampleOp> finish;
    std::string finish_name;
    int64_t finish_index = 0;  // seeds its randomness, as in its chain
  };
  // A sample waiting for the next batch: one per output.
  using Pending = std::vector<Sample>;
  // A lane's good sample waiting for its row, and how errors name it.
  struct Waiting {
    Pending outputs;
    std::string where;  // DescribeSample
  };
  absl::Status Place(const Output& out, const SampleRef& sample,
                     const std::string& where, TensorView data,
                     TensorView shapes, int64_t row) const;
  // The finishing operators (attrs `finish_ops`, ...), made and checked.
  absl::Status InitFinishing(const KernelInitContext& ctx);
  // Output `out`'s finishing operator on sample `h`, placed at `row`:
  // written straight into the row where its result fills the box, else
  // made whole first and placed padded.
  absl::Status PlaceFinished(const Output& out, const SampleRef& sample,
                             const SampleHeader& h, TensorView data,
                             TensorView shapes, int64_t row);
  // The finishing operator on sample `h` into `to`, or with `row` into
  // that row's bytes (ApplyInto); errors name the output, the operator and
  // the sample.
  absl::Status Finish(const Output& out, const SampleRef& sample,
                      const SampleHeader& h, Sample* to,
                      uint8_t* row = nullptr);
  // A sample kept for a later batch, finished (held samples and the
  // checkpoint's are the outputs' own).
  absl::Status Keep(const Output& out, const SampleRef& sample,
                    const SampleHeader& h, Sample* held);
  // Copies a sample's outputs into `held`.
  absl::Status Hold(const std::vector<const SampleHeader*>& sample,
                    Pending* held);
  // With attr `lanes` (an elastic reader's global batch): row l of a batch
  // is the next good sample of lane first_lane + l (elastic_lanes.h). A
  // chunk makes a batch once every lane has one or has run out, else a
  // piece of zero rows.
  absl::Status ForwardLanes(
      KernelContext* ctx, const ChunkInfo& chunk,
      const std::vector<std::vector<const SampleHeader*>>& samples);
  absl::Status SetRows(KernelContext* ctx, int64_t rows);
  // Forward's work; Forward adds the report of HeldBytes.
  absl::Status Assemble(KernelContext* ctx);
  // The bytes of the samples held over and waiting in lanes.
  int64_t HeldBytes() const;

  SkipLog* log_;
  const LaneCursors* cursors_;
  Sample file_;        // a lazily read file's bytes
  Sample finished_;    // a finished sample smaller than its box
  uint64_t seed_ = 0;  // the finishing operators' SampleRng
  int64_t batch_size_ = 1;
  std::vector<Output> outputs_;
  int64_t backlog_epoch_ = -1;
  std::deque<Pending> backlog_;
  // Elastic (attr `lanes` given): per lane of epoch lanes_epoch_, the next
  // index to take and the good samples waiting.
  bool elastic_ = false;
  LaneLayout lanes_;
  int64_t lanes_epoch_ = -1;
  std::vector<int64_t> lane_next_;
  std::vector<std::deque<Waiting>> lane_held_;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_STAGE_KERNELS_H_
