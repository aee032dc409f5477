// pipeline.tfrecord_reader: features of the tf.train.Examples in TFRecord
// files, one output each, sharded and shuffled as every reader.
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pipeline/stage_kernel_util.h"
#include "pipeline/stage_kernels.h"

namespace actorflow::internal::pipeline {

absl::StatusOr<int64_t> TfRecordReaderKernel::Open(
    const KernelInitContext& ctx) {
  auto paths = ctx.StringListAttr("paths");
  auto names = ctx.StringListAttr("features");
  auto kinds = ctx.StringListAttr("kinds");
  auto shapes = ctx.StringListAttr("shapes");
  auto defaults = ctx.FloatListAttr("defaults");
  absl::Status ok = FirstError({paths.status(), names.status(), kinds.status(),
                                shapes.status(), defaults.status()});
  if (!ok.ok()) return ok;
  const size_t n = outputs().size();
  if (names->size() != n || kinds->size() != n || shapes->size() != n ||
      (!defaults->empty() && defaults->size() != n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attrs 'features', 'kinds', 'shapes' (and 'defaults'): one entry per "
        "output (",
        n, ")"));
  }
  features_.clear();
  for (size_t k = 0; k < n; ++k) {
    Feature f;
    f.name = (*names)[k];
    const std::string& kind = (*kinds)[k];
    if (kind == "bytes") {
      f.type = DT_UINT8;
    } else if (kind == "int64") {
      f.type = DT_INT64;
    } else if (kind == "float32") {
      f.type = DT_FLOAT32;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "attr 'kinds': feature '", f.name,
          "': \"bytes\", \"int64\" or \"float32\", got \"", kind, "\""));
    }
    const std::string& shape = (*shapes)[k];
    if (shape == "var") {
      f.shape = {-1};
    } else {
      for (absl::string_view d :
           absl::StrSplit(shape, ',', absl::SkipEmpty())) {
        int64_t extent = 0;
        if (!absl::SimpleAtoi(d, &extent) || extent < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("attr 'shapes': feature '", f.name, "': \"", shape,
                           "\" is not \"var\" or extents like \"2,3\""));
        }
        f.shape.push_back(extent);
      }
    }
    if (f.type == DT_UINT8 && !f.shape.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'shapes': bytes feature '", f.name,
                       "': one value only (shape \"\")"));
    }
    if (f.type == DT_UINT8) f.shape = {-1};  // its bytes
    f.fallback = defaults->empty() ? 0 : (*defaults)[k];
    features_.push_back(std::move(f));
  }
  auto files = TfRecordFiles::Open(*paths);
  if (!files.ok()) {
    return absl::Status(
        files.status().code(),
        absl::StrCat("attr 'paths': ", files.status().message()));
  }
  files_ = std::move(*files);
  parsed_ = -1;
  return files_->size();
}

int64_t TfRecordReaderKernel::LargestSample(int k) const {
  if (files_ == nullptr || k < 0 || k >= static_cast<int>(features_.size())) {
    return -1;
  }
  // A record's values take at least a byte each (varints, floats 4).
  return files_->largest_record() *
         static_cast<int64_t>(DataTypeSize(features_[k].type));
}

absl::Status TfRecordReaderKernel::Fill(int64_t index, int k,
                                        SampleSlots::Slot* slot, bool*) {
  slot->name = files_->Describe(index);
  if (parsed_ != index) {
    std::string data;
    absl::Status ok = files_->Read(index, &data);
    if (!ok.ok()) return ok;
    if (!example_.ParseFromString(data)) {
      parsed_ = -1;
      // The reader names the sample (slot->name) around this.
      return absl::InvalidArgumentError("the record is not a tf.train.Example");
    }
    parsed_ = index;
  }
  const Feature& want = features_[k];
  const auto& all = example_.features().feature();
  const auto found = all.find(want.name);
  const bool missing = found == all.end();
  auto mismatch = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature '", want.name, "' ", what));
  };
  if (want.type == DT_UINT8) {
    if (missing) {
      slot->sample.Reshape(DT_UINT8, std::vector<int64_t>{0});
      return absl::OkStatus();
    }
    if (!found->second.has_bytes_list() ||
        found->second.bytes_list().value_size() != 1) {
      return mismatch("is not one bytes value");
    }
    const std::string& bytes = found->second.bytes_list().value(0);
    slot->sample.Reshape(
        DT_UINT8, std::vector<int64_t>{static_cast<int64_t>(bytes.size())});
    std::memcpy(slot->sample.storage.data(), bytes.data(), bytes.size());
    return absl::OkStatus();
  }
  const bool ints = want.type == DT_INT64;
  int64_t count = 0;
  if (!missing) {
    if (ints ? !found->second.has_int64_list()
             : !found->second.has_float_list()) {
      return mismatch(ints ? "is not an int64 list" : "is not a float list");
    }
    count = ints ? found->second.int64_list().value_size()
                 : found->second.float_list().value_size();
  }
  const bool var = want.shape == std::vector<int64_t>{-1};
  std::vector<int64_t> shape = var ? std::vector<int64_t>{count} : want.shape;
  const int64_t expected = ShapeElemCnt(shape);
  if (!missing && count != expected) {
    return mismatch(absl::StrCat("has ", count, " values, its shape ",
                                 ShapeString(want.shape), " holds ", expected));
  }
  slot->sample.Reshape(want.type, shape);
  for (int64_t i = 0; i < expected; ++i) {
    if (ints) {
      slot->sample.as<int64_t>()[i] =
          missing ? static_cast<int64_t>(want.fallback)
                  : found->second.int64_list().value(static_cast<int>(i));
    } else {
      slot->sample.as<float>()[i] =
          missing ? static_cast<float>(want.fallback)
                  : found->second.float_list().value(static_cast<int>(i));
    }
  }
  return absl::OkStatus();
}

ACTORFLOW_REGISTER_KERNEL("pipeline.tfrecord_reader", TfRecordReaderKernel);

}  // namespace actorflow::internal::pipeline
