#ifndef ACTORFLOW_PIPELINE_SAMPLE_LIST_H_
#define ACTORFLOW_PIPELINE_SAMPLE_LIST_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "actorflow/kernel.h"
#include "pipeline/dataset.h"
#include "pipeline/sample.h"

// How samples of varying size travel between pipeline stages in fixed-size
// registers. A stage's register holds, per output, a blob of sample headers
// (int64 [batch_size, kHeaderWords], dynamic in its first dimension: one
// row per sample of this piece) and a blob "chunk" saying which piece of
// which epoch it is. A header points at the sample's bytes and name, which
// live in buffers the producing stage keeps per register (SampleSlots).
//
// Invariant: a stage writes a register's slots only while it produces that
// register, and consumers read them only while they hold it; so the
// register protocol that guards the header guards the bytes too, and the
// slots are reused (no allocation once they have grown to the largest
// sample) exactly as often as the register is.
namespace actorflow::internal::pipeline {

constexpr int64_t kHeaderWords = 16;
constexpr int kMaxRank = 4;
constexpr char kChunkBlob[] = "chunk";

struct SampleHeader {
  int64_t data;  // const uint8_t*
  int64_t bytes;
  int64_t type;  // DataType
  int64_t rank;
  int64_t dims[kMaxRank];
  int64_t position;  // in the epoch's order: what seeds its randomness
  int64_t epoch;
  int64_t name;  // const char*: the file, or "" for dataset samples
  int64_t name_len;
  int64_t dropped;  // 1: failed and skipped; data holds the error message
  int64_t index;    // the sample's index in its dataset (after sharding)
  // 1: the bytes are the file `name`, not yet read: the first stage that
  // needs them reads it (so files are read by the workers, in parallel,
  // rather than one by one on the reader's thread).
  int64_t lazy_file;
  int64_t reserved;
};
static_assert(sizeof(SampleHeader) == kHeaderWords * sizeof(int64_t));

// Which piece a register holds: epoch, chunk (the reader's batch number in
// the epoch) and whether no chunk of this epoch follows it.
struct ChunkInfo {
  int64_t epoch = 0;
  int64_t chunk = 0;
  bool final = false;
};

inline absl::StatusOr<ChunkInfo> ReadChunk(ConstRegisterView reg) {
  auto words = reg.blob(kChunkBlob).data<int64_t>();
  if (!words.ok()) return words.status();
  if (words->size() != 3) {
    return absl::InternalError("pipeline: chunk blob is not int64 [3]");
  }
  return ChunkInfo{(*words)[0], (*words)[1], (*words)[2] != 0};
}

inline absl::Status WriteChunk(RegisterView reg, const ChunkInfo& chunk) {
  auto words = reg.blob(kChunkBlob).mutable_data<int64_t>();
  if (!words.ok()) return words.status();
  (*words)[0] = chunk.epoch;
  (*words)[1] = chunk.chunk;
  (*words)[2] = chunk.final ? 1 : 0;
  return absl::OkStatus();
}

// The blobs of a stage's register: one header blob per output name, then
// the chunk blob.
inline std::vector<BlobDesc> SampleListBlobs(
    const std::vector<std::string>& outputs, int64_t batch_size) {
  std::vector<BlobDesc> blobs;
  for (const std::string& name : outputs) {
    blobs.push_back(BlobDesc{name,
                             DT_INT64,
                             {batch_size, kHeaderWords},
                             /*is_dynamic=*/true});
  }
  blobs.push_back(BlobDesc{kChunkBlob, DT_INT64, {3}, false});
  return blobs;
}

// A header blob read-only.
class SampleListView {
 public:
  static absl::StatusOr<SampleListView> Of(ConstTensorView blob) {
    auto words = blob.data<int64_t>();
    if (!words.ok()) return words.status();
    return SampleListView(reinterpret_cast<const SampleHeader*>(words->data()),
                          blob.shape()[0]);
  }
  int64_t size() const { return size_; }
  const SampleHeader& header(int64_t i) const { return headers_[i]; }

 private:
  SampleListView(const SampleHeader* headers, int64_t size)
      : headers_(headers), size_(size) {}
  const SampleHeader* headers_;
  int64_t size_;
};

inline SampleRef RefOf(const SampleHeader& h) {
  return SampleRef{static_cast<DataType>(h.type),
                   absl::Span<const int64_t>(h.dims, h.rank),
                   reinterpret_cast<const uint8_t*>(h.data), h.bytes};
}

inline absl::string_view NameOf(const SampleHeader& h) {
  return absl::string_view(reinterpret_cast<const char*>(h.name), h.name_len);
}

// The sample's bytes: the header's, or for a lazy file its content, read
// into `scratch` (uint8 [bytes]). A read error names the problem only; the
// caller adds operator and sample.
inline absl::StatusOr<SampleRef> Materialize(const SampleHeader& h,
                                             Sample* scratch) {
  if (!h.lazy_file) return RefOf(h);
  absl::Status read = ReadWholeFile(std::string(NameOf(h)), &scratch->storage);
  if (!read.ok()) return read;
  scratch->type = DT_UINT8;
  scratch->shape.assign({static_cast<int64_t>(scratch->storage.size())});
  return scratch->ref();
}

// "sample 12 of epoch 0 ('/data/cat.jpg')": how errors name a sample.
inline std::string DescribeSample(const SampleHeader& h) {
  std::string text = absl::StrCat("sample ", h.position, " of epoch ", h.epoch);
  if (h.name_len > 0) absl::StrAppend(&text, " ('", NameOf(h), "')");
  return text;
}

// A stage's per-register buffers (see the invariant above), and the bytes
// their samples hold, recounted for a register each time it is written.
class SampleSlots {
 public:
  struct Slot {
    Sample sample;
    std::string name;
  };
  // One register's slots, and their bytes as last recounted.
  struct Register {
    std::vector<Slot> slots;
    int64_t bytes = 0;
  };
  // The register whose header blob is `blob`.
  Register& For(const TensorView& blob) {
    return registers_[blob.mutable_raw_data()];
  }
  // After `reg`'s slots were written: recounts its bytes.
  void Recount(Register* reg) {
    int64_t bytes = 0;
    for (const Slot& slot : reg->slots) {
      bytes += static_cast<int64_t>(slot.sample.storage.capacity());
    }
    bytes_ += bytes - reg->bytes;
    reg->bytes = bytes;
  }
  // Every register's, as last recounted (what KernelContext::
  // ReportHeldBytes reports for the stage).
  int64_t bytes() const { return bytes_; }

 private:
  // Node-based: a Register stays put as others are added, since a stage
  // with several outputs writes several header blobs at once.
  absl::node_hash_map<const void*, Register> registers_;
  int64_t bytes_ = 0;
};

// Fills one header blob of a register being produced.
class SampleListWriter {
 public:
  SampleListWriter(TensorView blob, SampleSlots* slots)
      : blob_(blob),
        owner_(slots),
        register_(&slots->For(blob)),
        slots_(&register_->slots) {
    headers_ = reinterpret_cast<SampleHeader*>(blob.mutable_raw_data());
    capacity_ = blob.max_shape()[0];
    // Headers point into the slots (a short name lives inside its Slot):
    // the vector must never move them.
    slots_->reserve(capacity_);
  }

  // The next sample's slot, to write into; Commit then records it.
  SampleSlots::Slot* Next() {
    if (static_cast<int64_t>(slots_->size()) <= count_) {
      slots_->emplace_back();  // within the reserved capacity
    }
    return &(*slots_)[count_];
  }
  // Records the slot Next gave as sample `count()` (described by `like`:
  // position, epoch, index; name taken from the slot). `lazy_file`: the
  // slot holds only the name of a file to read later.
  absl::Status Commit(const SampleHeader& like, bool dropped,
                      bool lazy_file = false) {
    if (count_ >= capacity_) {
      return absl::InternalError("pipeline: more samples than batch_size");
    }
    SampleSlots::Slot& slot = (*slots_)[count_];
    const Sample& s = slot.sample;
    if (s.shape.size() > kMaxRank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sample of rank ", s.shape.size(), " (at most ", kMaxRank, ")"));
    }
    SampleHeader& h = headers_[count_];
    std::memset(&h, 0, sizeof(h));
    h.data = reinterpret_cast<int64_t>(s.storage.data());
    h.bytes = s.bytes();
    h.type = s.type;
    h.rank = static_cast<int64_t>(s.shape.size());
    for (size_t d = 0; d < s.shape.size(); ++d) h.dims[d] = s.shape[d];
    h.position = like.position;
    h.epoch = like.epoch;
    h.index = like.index;
    h.name = reinterpret_cast<int64_t>(slot.name.data());
    h.name_len = static_cast<int64_t>(slot.name.size());
    h.dropped = dropped ? 1 : 0;
    h.lazy_file = lazy_file ? 1 : 0;
    ++count_;
    return absl::OkStatus();
  }
  // Sets the blob's piece shape to the samples committed, and reports the
  // stage's slot bytes for `ctx`'s task (TaskStats::register_bytes).
  absl::Status Finish(const KernelContext& ctx) {
    owner_->Recount(register_);
    ctx.ReportHeldBytes(owner_->bytes());
    const int64_t shape[] = {count_, kHeaderWords};
    return blob_.set_shape(shape);
  }
  int64_t count() const { return count_; }

 private:
  TensorView blob_;
  SampleSlots* owner_;
  SampleSlots::Register* register_;
  std::vector<SampleSlots::Slot>* slots_;  // register_'s
  SampleHeader* headers_ = nullptr;
  int64_t capacity_ = 0;
  int64_t count_ = 0;
};

// A dropped sample's slot: the error text as its bytes.
inline void FillDropped(const absl::Status& error, SampleSlots::Slot* slot) {
  const std::string text(error.message());
  const int64_t shape[] = {static_cast<int64_t>(text.size())};
  slot->sample.Reshape(DT_UINT8, shape);
  std::memcpy(slot->sample.storage.data(), text.data(), text.size());
}

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SAMPLE_LIST_H_
