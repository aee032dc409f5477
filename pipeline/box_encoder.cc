#include "pipeline/box_encoder.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "pipeline/boxes.h"

namespace actorflow::internal::pipeline {

namespace {

absl::Status FourAttr(const KernelInitContext& ctx, const char* name,
                      float fallback, float (*values)[4]) {
  auto list = ctx.FloatListAttr(name);
  if (!list.ok()) return list.status();
  if (list->empty()) {
    for (float& v : *values) v = fallback;
    return absl::OkStatus();
  }
  if (list->size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr '", name, "': 4 values (x, y, w, h), got ", list->size()));
  }
  for (int k = 0; k < 4; ++k) (*values)[k] = static_cast<float>((*list)[k]);
  return absl::OkStatus();
}

class BoxEncoderOp final : public MultiSampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto anchors = ctx.FloatListAttr("anchors");
    auto criteria = ctx.FloatAttrOr("criteria", 0.5);
    auto offset = ctx.BoolAttrOr("offset", false);
    auto scale = ctx.FloatAttrOr("scale", 1.0);
    for (const absl::Status& s : {anchors.status(), criteria.status(),
                                  offset.status(), scale.status()}) {
      if (!s.ok()) return s;
    }
    if (anchors->empty() || anchors->size() % 4 != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'anchors': ltrb boxes, 4 values each, got ",
                       anchors->size(), " values"));
    }
    if (*criteria < 0 || *criteria > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'criteria': an IoU in [0, 1], got ", *criteria));
    }
    absl::Status ok = FourAttr(ctx, "means", 0.f, &means_);
    if (ok.ok()) ok = FourAttr(ctx, "stds", 1.f, &stds_);
    if (!ok.ok()) return ok;
    for (float s : stds_) {
      if (s == 0) return absl::InvalidArgumentError("attr 'stds': 0 divides");
    }
    anchors_.clear();
    for (size_t k = 0; k < anchors->size(); k += 4) {
      anchors_.push_back(Box{static_cast<float>((*anchors)[k]),
                             static_cast<float>((*anchors)[k + 1]),
                             static_cast<float>((*anchors)[k + 2]),
                             static_cast<float>((*anchors)[k + 3])});
    }
    criteria_ = static_cast<float>(*criteria);
    offset_ = *offset;
    scale_ = static_cast<float>(*scale);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<SampleSpec>> Infer(
      absl::Span<const SampleSpec> in) const override {
    if (in.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("box_encoder: takes boxes and their labels, got ",
                       in.size(), " inputs"));
    }
    if (in[0].type != DT_FLOAT32 || in[0].max_shape.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "box_encoder: takes boxes, float32 [N, 4], got ",
          DataTypeName(in[0].type), " of rank ", in[0].max_shape.size()));
    }
    if (in[1].type != DT_INT32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "box_encoder: takes int32 labels, got ", DataTypeName(in[1].type)));
    }
    const int64_t a = static_cast<int64_t>(anchors_.size());
    return std::vector<SampleSpec>{{DT_FLOAT32, {a, 4}}, {DT_INT32, {a}}};
  }

  absl::Status Apply(absl::Span<const SampleRef> in, SampleRng*,
                     absl::Span<Sample> out) const override {
    auto boxes = ReadBoxes(in[0], /*ltrb=*/true, "box_encoder");
    if (!boxes.ok()) return boxes.status();
    const size_t n = boxes->size(), a = anchors_.size();
    if (in[1].type != DT_INT32 || ShapeElemCnt(in[1].shape) != int64_t(n)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "box_encoder: ", n, " boxes but ", ShapeElemCnt(in[1].shape), " ",
          DataTypeName(in[1].type), " labels (int32, one per box)"));
    }
    const int32_t* labels = in[1].as<int32_t>();
    // iou[b * a + k]: box b against anchor k; each box's best anchor 2,
    // which no IoU reaches, so that it wins that anchor.
    std::vector<float> iou(n * a);
    for (size_t b = 0; b < n; ++b) {
      size_t best = 0;
      for (size_t k = 0; k < a; ++k) {
        iou[b * a + k] = IoU((*boxes)[b], anchors_[k]);
        if (iou[b * a + k] >= iou[b * a + best]) best = k;
      }
      iou[b * a + best] = 2.f;
    }
    const int64_t rows[] = {static_cast<int64_t>(a), 4};
    const int64_t count[] = {static_cast<int64_t>(a)};
    out[0].Reshape(DT_FLOAT32, rows);
    out[1].Reshape(DT_INT32, count);
    float* row = out[0].as<float>();
    int32_t* label = out[1].as<int32_t>();
    for (size_t k = 0; k < a; ++k, row += 4) {
      const Box& anchor = anchors_[k];
      size_t best = 0;
      for (size_t b = 1; b < n; ++b) {
        if (iou[b * a + k] >= iou[best * a + k]) best = b;
      }
      const bool matched = n > 0 && iou[best * a + k] > criteria_;
      label[k] = matched ? labels[best] : 0;
      if (!offset_) {
        Write(matched ? (*boxes)[best] : anchor, row);
      } else if (!matched) {
        std::memset(row, 0, 4 * sizeof(float));
      } else {
        Encode((*boxes)[best], anchor, row);
      }
    }
    return absl::OkStatus();
  }

 private:
  static void Write(const Box& box, float* row) {
    row[0] = box.center_x();
    row[1] = box.center_y();
    row[2] = box.width();
    row[3] = box.height();
  }

  void Encode(const Box& box, const Box& anchor, float* row) const {
    float b[4], p[4];
    Write(box, b);
    Write(anchor, p);
    for (int k = 0; k < 4; ++k) {
      b[k] *= scale_;
      p[k] *= scale_;
    }
    row[0] = ((b[0] - p[0]) / p[2] - means_[0]) / stds_[0];
    row[1] = ((b[1] - p[1]) / p[3] - means_[1]) / stds_[1];
    row[2] = (std::log(b[2] / p[2]) - means_[2]) / stds_[2];
    row[3] = (std::log(b[3] / p[3]) - means_[3]) / stds_[3];
  }

  std::vector<Box> anchors_;
  float criteria_ = 0.5f;
  bool offset_ = false;
  float scale_ = 1;
  float means_[4] = {0, 0, 0, 0};
  float stds_[4] = {1, 1, 1, 1};
};

}  // namespace

std::unique_ptr<MultiSampleOp> MakeBoxEncoderOp() {
  return std::make_unique<BoxEncoderOp>();
}

std::vector<std::string> BoxEncoderAttrs() {
  return {"anchors", "criteria", "offset", "scale", "means", "stds"};
}

}  // namespace actorflow::internal::pipeline
