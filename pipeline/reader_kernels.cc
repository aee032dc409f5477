// The readers: a sample source over files (pipeline.file_reader), IDX
// arrays (pipeline.idx_reader), WebDataset tars (pipeline.webdataset_reader)
// or a Caffe LMDB (pipeline.caffe_reader), sharded and shuffled per epoch.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pipeline/stage_kernel_util.h"
#include "pipeline/stage_kernels.h"

namespace actorflow::internal::pipeline {

absl::Status ReaderKernel::Init(const KernelInitContext& ctx) {
  auto outputs = ctx.StringListAttr("outputs");
  auto batch = PositiveAttr(ctx, "batch_size", 0, 1);
  auto shard = PositiveAttr(ctx, "shard_id", 0, 0);
  auto shards = PositiveAttr(ctx, "num_shards", 1, 1);
  auto window = PositiveAttr(ctx, "shuffle_window", 0, 0);
  auto limit = PositiveAttr(ctx, "limit", 0, 0);
  auto seed = ctx.IntAttrOr("seed", 0);
  auto skip = ctx.BoolAttrOr("skip_errors", false);
  auto stick = ctx.BoolAttrOr("stick_to_shard", false);
  auto shuffle_list = ctx.BoolAttrOr("shuffle_list", false);
  auto elastic = ctx.BoolAttrOr("elastic", false);
  absl::Status ok = FirstError(
      {outputs.status(), batch.status(), shard.status(), shards.status(),
       window.status(), limit.status(), seed.status(), skip.status(),
       stick.status(), shuffle_list.status(), elastic.status()});
  if (ok.ok()) ok = ctx.ExpectInputs(1, 1);
  if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/true);
  if (!ok.ok()) return ok;
  if (outputs->empty() || outputs->size() > max_outputs()) {
    return absl::InvalidArgumentError(
        max_outputs() == 2
            ? "attr 'outputs': one name (the data) or two (data, label)"
            : absl::StrCat("attr 'outputs': 1 to ", max_outputs(), " names"));
  }
  if (*shard >= *shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr 'shard_id': ", *shard, " is not below num_shards ", *shards));
  }
  if (*elastic && *stick) {
    return absl::InvalidArgumentError(
        "attr 'stick_to_shard': an elastic reader's ranks share every "
        "epoch's one order; leave it out");
  }
  outputs_ = *outputs;
  batch_size_ = *batch;
  elastic_ = *elastic;
  window_ = *window;
  seed_ = static_cast<uint64_t>(*seed);
  skip_errors_ = *skip;
  auto size = Open(ctx);
  if (!size.ok()) return size.status();
  // Shuffling permutes the whole list before it is cut into shards (so
  // shards are random subsets); with one shard only when asked
  // (`shuffle_list`, DALI's random_shuffle), else the window alone
  // shuffles, as EpochOrder does for the in-plan batch kernels.
  dataset_size_ = *size;
  if (elastic_) {
    // One order for every rank: the list permuted (by tar file) as for
    // several shards, then the window; each rank reads its lanes of it.
    shards_ = std::make_unique<ShardPlan>(
        *size, 0, 1, /*shuffle=*/window_ > 1 || *shuffle_list, false,
        ShuffleGroups());
    lanes_.lanes = batch_size_ * *shards;
    lanes_.first = batch_size_ * *shard;
    lanes_.own = batch_size_;
    lanes_.positions = *limit > 0 ? std::min(*size, *limit) : *size;
    epoch_size_ = 0;
    for (int64_t l = lanes_.first; l < lanes_.first + lanes_.own; ++l) {
      epoch_size_ += lanes_.LaneLength(l);
    }
  } else {
    shards_ = std::make_unique<ShardPlan>(
        *size, *shard, *shards,
        /*shuffle=*/window_ > 1 && (*shards > 1 || *shuffle_list), *stick,
        ShuffleGroups());
    epoch_size_ = shards_->per_shard();
    if (*limit > 0) epoch_size_ = std::min(epoch_size_, *limit);
  }
  return ctx.SetOutputBlobs("out", SampleListBlobs(outputs_, batch_size_));
}

absl::Status ReaderKernel::AnnounceUpcoming(int64_t epoch, int64_t first,
                                            int64_t last) {
  const int64_t n = epoch_size();
  // By output t the window has taken positions [0, t + window): see
  // EpochOrder. Beyond that, the head start the reader asks for, which runs
  // on into the next epoch (whose first positions are known already).
  const int64_t ahead = pieces_ahead() * batch_size_;
  int64_t want = last + std::max<int64_t>(window_, 1) - 1 + ahead;
  if (ahead == 0) want = std::min(want, n);
  std::vector<bool> given;  // positions a resumed epoch gave before
  if (announce_epoch_ != epoch && announce_epoch_ != epoch + 1) {
    // Not announced before (the first piece, a resume, a skipped rest):
    // from the epoch's start.
    announce_epoch_ = epoch;
    announced_ = 0;
    if (first > 0) {
      given.assign(n, false);
      for (int64_t t = 0; t < std::min(first, n); ++t) given[order_[t]] = true;
    }
  }
  for (int64_t e = epoch; e <= epoch + 1 && want > 0; ++e, want -= n) {
    if (e < announce_epoch_) continue;  // all of it announced
    if (e > announce_epoch_) {
      announce_epoch_ = e;
      announced_ = 0;
    }
    const int64_t upto = std::min(n, want);
    std::vector<int64_t> indices;
    for (int64_t p = announced_; p < upto; ++p) {
      if (e != epoch || given.empty() || !given[p]) {
        indices.push_back(shards_->Index(e, p));
      }
    }
    announced_ = std::max(announced_, upto);
    if (!indices.empty()) {
      absl::Status upcoming = Upcoming(e, indices);
      if (!upcoming.ok()) return upcoming;
    }
  }
  return absl::OkStatus();
}

std::vector<int64_t> ReaderKernel::LanePositions(int64_t chunk) const {
  std::vector<int64_t> positions;
  const int64_t start = chunk * lanes_.lanes + lanes_.first;
  for (int64_t p = start; p < std::min(start + lanes_.own, lanes_.positions);
       ++p) {
    positions.push_back(p);
  }
  return positions;
}

absl::Status ReaderKernel::AnnounceLanes(int64_t epoch, int64_t chunk) {
  const int64_t batches = lanes_.BatchesPerEpoch();
  if (batches == 0) return absl::OkStatus();
  // Chunks counted across epochs; a chunk past an epoch's batches (one
  // that flushes lanes behind after skips) reads nothing, so its head
  // start is the next epoch's first chunks.
  const int64_t now = epoch * batches + std::min(chunk, batches);
  int64_t next = announce_epoch_ * batches + announced_;
  if (announce_epoch_ != epoch && announce_epoch_ != epoch + 1) {
    next = now;  // not announced before: the first piece, or a resume
  }
  for (; next <= now + pieces_ahead(); ++next) {
    const int64_t e = next / batches;
    if (e != order_epoch_ && e != ahead_order_epoch_) {
      ahead_order_ = EpochOrder(lanes_.positions, window_, seed_, e);
      ahead_order_epoch_ = e;
    }
    const std::vector<int64_t>& order =
        e == order_epoch_ ? order_ : ahead_order_;
    std::vector<int64_t> indices;
    for (int64_t p : LanePositions(next % batches)) {
      indices.push_back(shards_->Index(e, order[p]));
    }
    if (!indices.empty()) {
      absl::Status upcoming = Upcoming(e, indices);
      if (!upcoming.ok()) return upcoming;
    }
  }
  announce_epoch_ = next / batches;
  announced_ = next % batches;
  return absl::OkStatus();
}

absl::Status ReaderKernel::Forward(KernelContext* ctx) {
  auto chunk = ReadChunk(ctx->input(0));
  if (!chunk.ok()) return chunk.status();
  if (chunk->epoch != order_epoch_) {
    if (chunk->epoch == ahead_order_epoch_) {
      order_.swap(ahead_order_);
      ahead_order_epoch_ = -1;
    } else {
      order_ = EpochOrder(elastic_ ? lanes_.positions : epoch_size(), window_,
                          seed_, chunk->epoch);
    }
    order_epoch_ = chunk->epoch;
  }
  RegisterView out = ctx->output(0);
  std::vector<int64_t> positions;
  if (elastic_) {
    positions = LanePositions(chunk->chunk);
    if (pieces_ahead() > 0) {
      absl::Status announced = AnnounceLanes(chunk->epoch, chunk->chunk);
      if (!announced.ok()) return announced;
    }
  } else {
    const int64_t first = chunk->chunk * batch_size_;
    const int64_t last = std::min(epoch_size(), first + batch_size_);
    for (int64_t p = first; p < last; ++p) positions.push_back(p);
    if (pieces_ahead() > 0) {
      absl::Status announced = AnnounceUpcoming(chunk->epoch, first, last);
      if (!announced.ok()) return announced;
    }
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    SampleListWriter writer(out.blob(outputs_[k]), &slots_);
    for (int64_t position : positions) {
      SampleHeader like{};
      like.position = position;
      like.epoch = chunk->epoch;
      like.index = shards_->Index(chunk->epoch, order_[position]);
      filling_epoch_ = chunk->epoch;
      SampleSlots::Slot* slot = writer.Next();
      bool lazy = false;
      absl::Status filled = Fill(like.index, static_cast<int>(k), slot, &lazy);
      bool dropped = false;
      if (!filled.ok()) {
        like.name = reinterpret_cast<int64_t>(slot->name.data());
        like.name_len = static_cast<int64_t>(slot->name.size());
        filled = SampleError(ctx->task_name(), like, filled);
        if (!skip_errors_) return filled;
        FillDropped(filled, slot);
        dropped = true;
      }
      absl::Status committed = writer.Commit(like, dropped, lazy);
      if (!committed.ok()) return committed;
    }
    absl::Status finished = writer.Finish(*ctx);
    if (!finished.ok()) return finished;
  }
  if (counter_ != nullptr) counter_->fetch_add(1, std::memory_order_relaxed);
  return WriteChunk(out, *chunk);
}

absl::StatusOr<int64_t> FileReaderKernel::Open(const KernelInitContext& ctx) {
  auto dir = ctx.StringAttrOr("dir", "");
  auto files = ctx.StringListAttr("files");
  auto labels = ctx.IntListAttr("labels");
  auto list = ctx.StringAttrOr("file_list", "");
  absl::Status ok = FirstError(
      {dir.status(), files.status(), labels.status(), list.status()});
  if (!ok.ok()) return ok;
  const int given = !dir->empty() + !files->empty() + !list->empty();
  if (given != 1) {
    return absl::InvalidArgumentError(
        "attrs: give exactly one of 'dir', 'files' and 'file_list'");
  }
  if (!dir->empty()) {
    auto listed = ListImageDirectory(*dir);
    if (!listed.ok()) {
      return absl::Status(
          listed.status().code(),
          absl::StrCat("attr 'dir': ", listed.status().message()));
    }
    files_ = std::move(*listed);
    if (files_.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "attr 'dir': no .jpg, .jpeg or .png files under '", *dir, "'"));
    }
  } else if (!list->empty()) {
    auto listed = ReadFileList(*list);
    if (!listed.ok()) {
      return absl::Status(
          listed.status().code(),
          absl::StrCat("attr 'file_list': ", listed.status().message()));
    }
    files_ = std::move(*listed);
  } else {
    if (!labels->empty() && labels->size() != files->size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'labels': ", labels->size(), " labels for ",
                       files->size(), " files"));
    }
    for (size_t i = 0; i < files->size(); ++i) {
      files_.push_back(
          FileEntry{(*files)[i],
                    labels->empty() ? 0 : static_cast<int32_t>((*labels)[i])});
    }
  }
  return static_cast<int64_t>(files_.size());
}

absl::Status FileReaderKernel::Fill(int64_t index, int k,
                                    SampleSlots::Slot* slot, bool* lazy) {
  const FileEntry& file = files_[index];
  slot->name = file.path;
  if (k == 1) {
    slot->sample.Reshape(DT_INT32, {});
    *slot->sample.as<int32_t>() = file.label;
    return absl::OkStatus();
  }
  // Read by whichever worker takes the sample (see SampleHeader).
  slot->sample.Reshape(DT_UINT8, {0});
  *lazy = true;
  return absl::OkStatus();
}

int64_t FileReaderKernel::LargestSample(int k) const {
  if (k != 0) return -1;
  int64_t largest = -1;
  for (const FileEntry& file : files_) {
    struct stat st;
    if (::stat(file.path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      largest = std::max<int64_t>(largest, st.st_size);
    }
  }
  return largest;
}

absl::StatusOr<int64_t> IdxReaderKernel::Open(const KernelInitContext& ctx) {
  auto images = ctx.StringAttr("images");
  auto labels = ctx.StringAttrOr("labels", "");
  absl::Status ok = FirstError({images.status(), labels.status()});
  if (!ok.ok()) return ok;
  if (outputs().size() == 2 && labels->empty()) {
    return absl::InvalidArgumentError(
        "attr 'labels': required for a second output");
  }
  images_path_ = *images;
  labels_path_ = *labels;
  auto head = ReadIdxHeader(images_path_);
  if (!head.ok()) return head.status();
  if (head->size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'images': '", images_path_, "' holds ",
                     ShapeString(*head), ", not [count, rows, cols]"));
  }
  if (!labels_path_.empty()) {
    auto label_head = ReadIdxHeader(labels_path_);
    if (!label_head.ok()) return label_head.status();
    if (label_head->size() != 1 || (*label_head)[0] != (*head)[0]) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'labels': '", labels_path_, "' holds ",
                       ShapeString(*label_head),
                       ", not one label per image of ", ShapeString(*head)));
    }
  }
  return (*head)[0];
}

absl::Status IdxReaderKernel::Load() {
  auto images = ReadIdx(images_path_);
  if (!images.ok()) return images.status();
  images_ = std::move(*images);
  if (!labels_path_.empty()) {
    auto labels = ReadIdx(labels_path_);
    if (!labels.ok()) return labels.status();
    labels_ = std::move(*labels);
  }
  loaded_ = true;
  return absl::OkStatus();
}

absl::Status IdxReaderKernel::Fill(int64_t index, int k,
                                   SampleSlots::Slot* slot, bool*) {
  if (!loaded_) {
    absl::Status ok = Load();
    if (!ok.ok()) return ok;
  }
  slot->name =
      absl::StrCat(k == 0 ? images_path_ : labels_path_, "[", index, "]");
  if (k == 1) {
    slot->sample.Reshape(DT_INT32, {});
    *slot->sample.as<int32_t>() = labels_.data[index];
    return absl::OkStatus();
  }
  const int64_t rows = images_.dims[1];
  const int64_t cols = images_.dims[2];
  const int64_t shape[] = {rows, cols, 1};
  slot->sample.Reshape(DT_UINT8, shape);
  std::memcpy(slot->sample.storage.data(),
              images_.data.data() + index * rows * cols, rows * cols);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> WebDatasetReaderKernel::Open(
    const KernelInitContext& ctx) {
  auto paths = ctx.StringListAttr("paths");
  auto exts = ctx.StringListAttr("ext");
  auto missing = ctx.StringAttrOr("missing_component_behavior", "empty");
  auto dtypes = ctx.StringListAttr("dtypes");
  auto read_ahead = PositiveAttr(ctx, "read_ahead_bytes", 64 << 20, 0);
  auto attempts = PositiveAttr(ctx, "http_attempts", 6, 1);
  absl::Status ok =
      FirstError({paths.status(), exts.status(), missing.status(),
                  dtypes.status(), read_ahead.status(), attempts.status()});
  if (!ok.ok()) return ok;
  if (paths->empty()) {
    return absl::InvalidArgumentError("attr 'paths': the tar files to read");
  }
  if (exts->size() != outputs().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'ext': one entry per output (", outputs().size(),
                     "), got ", exts->size()));
  }
  if (!dtypes->empty() && dtypes->size() != outputs().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'dtypes': one per output (", outputs().size(),
                     "), got ", dtypes->size()));
  }
  if (*missing != "empty" && *missing != "skip" && *missing != "error") {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr 'missing_component_behavior': \"empty\", \"skip\" or "
        "\"error\", got \"",
        *missing, "\""));
  }
  exts_.clear();
  types_.clear();
  for (size_t k = 0; k < exts->size(); ++k) {
    exts_.push_back(absl::StrSplit((*exts)[k], ';', absl::SkipEmpty()));
    auto type = ParseDataType(dtypes->empty() ? "uint8" : (*dtypes)[k]);
    if (!type.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'dtypes': ", type.status().message()));
    }
    types_.push_back(*type);
  }
  ShardReadOptions options;
  options.retry.attempts = static_cast<int>(*attempts);
  files_ = std::make_unique<ShardFiles>(options);
  read_ahead_bytes_ = *read_ahead;
  ahead_.clear();
  ahead_bytes_ = 0;
  purged_epoch_ = -1;
  remote_ = false;
  prefetcher_.reset();
  for (const std::string& path : *paths) {
    remote_ = remote_ || IsHttpUrl(path);
    auto added = files_->Add(path);
    if (!added.ok()) {
      return absl::Status(
          added.status().code(),
          absl::StrCat("attr 'paths': ", added.status().message()));
    }
  }
  auto samples = IndexWebDataset(files_.get());
  if (!samples.ok()) {
    return absl::Status(
        samples.status().code(),
        absl::StrCat("attr 'paths': ", samples.status().message()));
  }
  samples_.clear();
  per_file_.assign(paths->size(), 0);
  for (TarSample& sample : *samples) {
    std::string lacks;
    for (size_t k = 0; k < exts_.size() && lacks.empty(); ++k) {
      bool found = false;
      for (const std::string& ext : exts_[k]) {
        found = found || sample.components.count(ext) > 0;
      }
      if (!found) lacks = (*exts)[k];
    }
    if (!lacks.empty() && *missing == "error") {
      return absl::NotFoundError(
          absl::StrCat("sample '", sample.key, "' has no '", lacks,
                       "' component (missing_component_behavior \"error\")"));
    }
    if (!lacks.empty() && *missing == "skip") continue;
    if (!sample.components.empty()) {
      ++per_file_[sample.components.begin()->second.file];
    }
    samples_.push_back(std::move(sample));
  }
  if (samples_.empty()) {
    return absl::NotFoundError("attr 'paths': the tar files hold no sample");
  }
  if (remote_) prefetcher_ = std::make_unique<RemotePrefetcher>(options.retry);
  return static_cast<int64_t>(samples_.size());
}

int64_t WebDatasetReaderKernel::LargestSample(int k) const {
  int64_t largest = 0;
  for (const TarSample& sample : samples_) {
    for (const std::string& ext : exts_[k]) {
      auto it = sample.components.find(ext);
      if (it != sample.components.end()) {
        largest = std::max(largest, it->second.size);
        break;
      }
    }
  }
  return largest;
}

absl::Status WebDatasetReaderKernel::Fill(int64_t index, int k,
                                          SampleSlots::Slot* slot, bool*) {
  const int64_t epoch = filling_epoch();
  if (epoch > purged_epoch_) {
    // Uses announced for an epoch before this one will never come (a
    // pipeline reset skipped them): drop them.
    for (auto it = ahead_.begin(); it != ahead_.end();) {
      Ahead& sample = it->second;
      sample.uses.erase(sample.uses.begin(), sample.uses.lower_bound(epoch));
      it = sample.uses.empty() ? DropAhead(it) : std::next(it);
    }
    purged_epoch_ = epoch;
  }
  auto held = ahead_.find(index);
  const Fetched* fetched = nullptr;
  if (held != ahead_.end() && held->second.fetched) {
    fetched = &held->second.outputs[k];
  }
  absl::Status filled = FillComponent(index, k, fetched, slot);
  if (held != ahead_.end()) {
    Ahead& sample = held->second;
    auto uses = sample.uses.find(epoch);
    if (uses != sample.uses.end() &&
        ++sample.taken == static_cast<int>(exts_.size())) {
      sample.taken = 0;
      if (--uses->second == 0) sample.uses.erase(uses);
      if (sample.uses.empty()) DropAhead(held);
    }
  }
  return filled;
}

std::map<int64_t, WebDatasetReaderKernel::Ahead>::iterator
WebDatasetReaderKernel::DropAhead(std::map<int64_t, Ahead>::iterator it) {
  for (const Fetched& bytes : it->second.outputs) ahead_bytes_ -= bytes.size;
  return ahead_.erase(it);
}

absl::Status WebDatasetReaderKernel::FillComponent(int64_t index, int k,
                                                   const Fetched* fetched,
                                                   SampleSlots::Slot* slot) {
  const TarSample& sample = samples_[index];
  const TarComponent* component = nullptr;
  std::string ext;
  for (const std::string& e : exts_[k]) {
    auto it = sample.components.find(e);
    if (it != sample.components.end()) {
      component = &it->second;
      ext = e;
      break;
    }
  }
  const DataType type = types_[k];
  if (component == nullptr) {  // "empty"
    slot->name = sample.key;
    slot->sample.Reshape(type, {0});
    return absl::OkStatus();
  }
  slot->name =
      absl::StrCat(files_->path(component->file), ":", sample.key, ".", ext);
  if (component->available < component->size) {
    return absl::DataLossError(absl::StrCat(
        "truncated: the tar file ends after ", component->available, " of its ",
        component->size, " bytes"));
  }
  const int64_t size = DataTypeSize(type);
  if (component->size % size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("component '", ext, "' has ", component->size,
                     " bytes, not a whole number of ", DataTypeName(type)));
  }
  const int64_t shape[] = {component->size / size};
  slot->sample.Reshape(type, shape);
  if (fetched != nullptr) {
    RemotePrefetcher::Run& run = *fetched->run;
    absl::Status read = RemotePrefetcher::Wait(&run);
    if (!read.ok()) return read;
    if (fetched->at + fetched->size > static_cast<int64_t>(run.bytes.size())) {
      return absl::DataLossError(absl::StrCat(
          "'", run.url, "': the server sent ", run.bytes.size(), " bytes at ",
          run.offset, " where its size says ", run.length));
    }
    std::memcpy(slot->sample.storage.data(), run.bytes.data() + fetched->at,
                fetched->size);
    return absl::OkStatus();
  }
  auto read =
      files_->Read(component->file, component->offset, component->size,
                   reinterpret_cast<char*>(slot->sample.storage.data()));
  if (!read.ok()) return read.status();
  if (*read < component->size) {
    return absl::DataLossError(absl::StrCat("cannot read ", component->size,
                                            " bytes at ", component->offset,
                                            ": the file ends first"));
  }
  return absl::OkStatus();
}

absl::Status WebDatasetReaderKernel::Upcoming(
    int64_t epoch, const std::vector<int64_t>& indices) {
  if (!remote_) return absl::OkStatus();  // local reads need no head start
  // The components to fetch, within the budget; the rest are read when
  // filled.
  struct Wanted {
    int file;
    int64_t offset, size;
    Fetched* into;
  };
  std::vector<Wanted> wanted;
  for (int64_t index : indices) {
    Ahead& sample = ahead_[index];
    const bool known = !sample.uses.empty();
    ++sample.uses[epoch];
    // Known: fetched already (or read when filled); one fetch serves every
    // use, this epoch's and the next's.
    if (known || ahead_bytes_ >= read_ahead_bytes_) continue;
    sample.fetched = true;
    sample.outputs.resize(exts_.size());
    for (size_t k = 0; k < exts_.size(); ++k) {
      for (const std::string& ext : exts_[k]) {
        auto it = samples_[index].components.find(ext);
        if (it == samples_[index].components.end()) continue;
        const TarComponent& c = it->second;
        // A truncated member stays unread: Fill names it.
        if (c.available == c.size && c.size > 0) {
          wanted.push_back(
              Wanted{c.file, c.offset, c.size, &sample.outputs[k]});
          ahead_bytes_ += c.size;
        }
        break;
      }
    }
  }
  std::sort(wanted.begin(), wanted.end(), [](const Wanted& a, const Wanted& b) {
    return std::tie(a.file, a.offset) < std::tie(b.file, b.offset);
  });
  // One request per run of components close together in one file (tar
  // headers and padding between them come along), of at most kRunBytes
  // unless one component is larger.
  constexpr int64_t kGap = 64 << 10;
  for (size_t i = 0; i < wanted.size();) {
    size_t j = i + 1;
    int64_t end = wanted[i].offset + wanted[i].size;
    while (j < wanted.size() && wanted[j].file == wanted[i].file &&
           wanted[j].offset >= end && wanted[j].offset - end <= kGap &&
           wanted[j].offset + wanted[j].size - wanted[i].offset <=
               RemotePrefetcher::kRunBytes) {
      end = wanted[j].offset + wanted[j].size;
      ++j;
    }
    auto run = prefetcher_->Fetch(files_->path(wanted[i].file),
                                  wanted[i].offset, end - wanted[i].offset);
    for (size_t w = i; w < j; ++w) {
      *wanted[w].into =
          Fetched{run, wanted[w].offset - wanted[i].offset, wanted[w].size};
    }
    i = j;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CaffeReaderKernel::Open(const KernelInitContext& ctx) {
  auto path = ctx.StringAttr("path");
  auto image = ctx.BoolAttrOr("image_available", true);
  auto label = ctx.BoolAttrOr("label_available", true);
  absl::Status ok = FirstError({path.status(), image.status(), label.status()});
  if (!ok.ok()) return ok;
  const size_t wanted = size_t{*image} + size_t{*label};
  if (wanted == 0 || outputs().size() != wanted) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attrs 'image_available' and 'label_available' give ", wanted,
        " output(s), attr 'outputs' names ", outputs().size()));
  }
  auto db = CaffeLmdb::Open(*path);
  if (!db.ok()) {
    return absl::Status(db.status().code(),
                        absl::StrCat("attr 'path': ", db.status().message()));
  }
  path_ = *path;
  db_ = std::move(*db);
  image_ = *image;
  label_ = *label;
  raw_shape_.clear();
  actorflow::pipeline::CaffeDatum first;
  ok = db_->Read(0, &first);
  if (!ok.ok()) return ok;
  if (image_ && !IsEncoded(first)) {
    raw_shape_ = {first.height(), first.width(), first.channels()};
  }
  labels_.assign(db_->size(), kUnread);
  return db_->size();
}

int64_t CaffeReaderKernel::LargestSample(int k) const {
  if (!image_ || k != 0 || db_ == nullptr) return -1;
  return raw_shape_.empty() ? db_->largest_record()
                            : raw_shape_[0] * raw_shape_[1] * raw_shape_[2];
}

absl::Status CaffeReaderKernel::Fill(int64_t index, int k,
                                     SampleSlots::Slot* slot, bool*) {
  slot->name = absl::StrCat(path_, ":", db_->key(index));
  const bool image = image_ && k == 0;
  if (!image && labels_[index] != kUnread) {
    slot->sample.Reshape(DT_INT32, {});
    *slot->sample.as<int32_t>() = static_cast<int32_t>(labels_[index]);
    return absl::OkStatus();
  }
  actorflow::pipeline::CaffeDatum datum;
  absl::Status ok = db_->Read(index, &datum);
  if (!ok.ok()) return ok;
  if (datum.has_label()) labels_[index] = datum.label();
  if (!image) {
    if (!datum.has_label()) {
      return absl::NotFoundError(
          absl::StrCat("record '", db_->key(index), "' has no label"));
    }
    slot->sample.Reshape(DT_INT32, {});
    *slot->sample.as<int32_t>() = datum.label();
    return absl::OkStatus();
  }
  const std::string& data = datum.data();
  if (raw_shape_.empty() != IsEncoded(datum)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "record '", db_->key(index), "' is ",
        IsEncoded(datum) ? "encoded" : "raw", ", the first record ",
        raw_shape_.empty() ? "encoded" : "raw"));
  }
  if (!raw_shape_.empty()) {
    const std::vector<int64_t> shape = {datum.height(), datum.width(),
                                        datum.channels()};
    if (shape != raw_shape_ ||
        static_cast<int64_t>(data.size()) != shape[0] * shape[1] * shape[2]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "record '", db_->key(index), "': ", data.size(), " raw bytes of ",
          shape[0], " x ", shape[1], " x ", shape[2], ", the first record ",
          raw_shape_[0], " x ", raw_shape_[1], " x ", raw_shape_[2]));
    }
    slot->sample.Reshape(DT_UINT8, raw_shape_);
  } else {
    const int64_t bytes[] = {static_cast<int64_t>(data.size())};
    slot->sample.Reshape(DT_UINT8, bytes);
  }
  std::memcpy(slot->sample.storage.data(), data.data(), data.size());
  return absl::OkStatus();
}

ACTORFLOW_REGISTER_KERNEL("pipeline.file_reader", FileReaderKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.webdataset_reader", WebDatasetReaderKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.idx_reader", IdxReaderKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.caffe_reader", CaffeReaderKernel);

}  // namespace actorflow::internal::pipeline
