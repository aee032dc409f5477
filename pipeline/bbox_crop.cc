#include "pipeline/bbox_crop.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "pipeline/boxes.h"

namespace actorflow::internal::pipeline {

namespace {

constexpr int64_t kMostWindows = 1000000;
constexpr float kNoCrop = -1;

absl::Status RangeAttr(const KernelInitContext& ctx, const char* name,
                       float low_bound, float high_bound, float* low,
                       float* high) {
  auto range = ctx.FloatListAttr(name);
  if (!range.ok()) return range.status();
  if (range->empty()) return absl::OkStatus();
  if (range->size() != 2 || (*range)[0] > (*range)[1] ||
      (*range)[0] <= low_bound || (*range)[1] > high_bound) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr '", name, "': wants [min, max], ", low_bound, " < min <= max",
        high_bound < 1e30 ? absl::StrCat(" <= ", high_bound) : ""));
  }
  *low = static_cast<float>((*range)[0]);
  *high = static_cast<float>((*range)[1]);
  return absl::OkStatus();
}

class RandomBboxCropOp final : public MultiSampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto thresholds = ctx.FloatListAttr("thresholds");
    auto type = ctx.StringAttrOr("threshold_type", "iou");
    auto attempts = ctx.IntAttrOr("num_attempts", 1);
    auto total = ctx.IntAttrOr("total_num_attempts", -1);
    auto no_crop = ctx.BoolAttrOr("allow_no_crop", true);
    auto all = ctx.BoolAttrOr("all_boxes_above_threshold", true);
    auto ltrb = ctx.BoolAttrOr("ltrb", true);
    auto prune = ctx.FloatAttrOr("bbox_prune_threshold", -1);
    for (const absl::Status& s :
         {thresholds.status(), type.status(), attempts.status(), total.status(),
          no_crop.status(), all.status(), ltrb.status(), prune.status()}) {
      if (!s.ok()) return s;
    }
    absl::Status ok =
        RangeAttr(ctx, "scaling", 0, 1, &scale_low_, &scale_high_);
    if (ok.ok()) {
      ok = RangeAttr(ctx, "aspect_ratio", 0, 1e30f, &ratio_low_, &ratio_high_);
    }
    if (!ok.ok()) return ok;
    if (*type != "iou" && *type != "overlap") {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'threshold_type': \"iou\" or \"overlap\", got \"",
                       *type, "\""));
    }
    if (*attempts < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'num_attempts': at least 1, got ", *attempts));
    }
    options_.clear();
    for (double t :
         thresholds->empty() ? std::vector<double>{0.0} : *thresholds) {
      if (t < 0 || t > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("attr 'thresholds': each in [0, 1], got ", t));
      }
      options_.push_back(static_cast<float>(t));
    }
    if (*no_crop) options_.push_back(kNoCrop);
    iou_ = *type == "iou";
    attempts_ = *attempts;
    most_windows_ = *total > 0 ? *total : kMostWindows;
    all_ = *all;
    ltrb_ = *ltrb;
    prune_ = static_cast<float>(*prune);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<SampleSpec>> Infer(
      absl::Span<const SampleSpec> in) const override {
    if (in.empty() || in.size() > 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_bbox_crop: takes boxes and optionally their labels, got ",
          in.size(), " inputs"));
    }
    const SampleSpec& boxes = in[0];
    if (boxes.type != DT_FLOAT32 || boxes.max_shape.size() != 2 ||
        (boxes.max_shape[1] != 4 && boxes.max_shape[1] >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "random_bbox_crop: takes boxes, float32 [N, 4], got ",
          DataTypeName(boxes.type), " of rank ", boxes.max_shape.size()));
    }
    const SampleSpec window{DT_FLOAT32, {2}};
    std::vector<SampleSpec> out = {window, window, boxes};
    if (in.size() == 2) {
      if (in[1].max_shape.empty() || in[1].max_shape.size() > 2) {
        return absl::InvalidArgumentError(
            "random_bbox_crop: takes labels as [N] or [N, 1]");
      }
      out.push_back(in[1]);
    }
    return out;
  }

  absl::Status Apply(absl::Span<const SampleRef> in, SampleRng* rng,
                     absl::Span<Sample> out) const override {
    auto boxes = ReadBoxes(in[0], ltrb_, "random_bbox_crop");
    if (!boxes.ok()) return boxes.status();
    if (in.size() == 2 &&
        ShapeElemCnt(in[1].shape) != static_cast<int64_t>(boxes->size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("random_bbox_crop: ", boxes->size(), " boxes but ",
                       ShapeElemCnt(in[1].shape), " labels"));
    }
    Box window{0, 0, 1, 1};
    std::vector<int> kept;
    FindWindow(*boxes, rng, &window, &kept);
    const float w = window.width(), h = window.height();
    std::vector<Box> moved;
    for (int k : kept) {
      const Box& b = (*boxes)[k];
      moved.push_back(
          Box{Clip((b.l - window.l) / w), Clip((b.t - window.t) / h),
              Clip((b.r - window.l) / w), Clip((b.b - window.t) / h)});
    }
    const int64_t pair[] = {2};
    out[0].Reshape(DT_FLOAT32, pair);
    out[0].as<float>()[0] = window.l;
    out[0].as<float>()[1] = window.t;
    out[1].Reshape(DT_FLOAT32, pair);
    out[1].as<float>()[0] = w;
    out[1].as<float>()[1] = h;
    WriteBoxes(moved, ltrb_, &out[2]);
    if (in.size() == 2) {
      const SampleRef& labels = in[1];
      SampleShape shape(labels.shape.begin(), labels.shape.end());
      shape[0] = static_cast<int64_t>(kept.size());
      out[3].Reshape(labels.type, shape);
      const size_t size = DataTypeSize(labels.type);
      for (size_t j = 0; j < kept.size(); ++j) {
        std::memcpy(out[3].storage.data() + j * size,
                    labels.data + kept[j] * size, size);
      }
    }
    return absl::OkStatus();
  }

 private:
  static float Clip(float v) { return std::min(1.f, std::max(0.f, v)); }

  // The window and the boxes it keeps (their indices).
  void FindWindow(const std::vector<Box>& boxes, SampleRng* rng, Box* window,
                  std::vector<int>* kept) const {
    // A window holds only with a box's centre in it: without boxes none
    // does, and only "no crop" can end the search.
    int64_t windows = boxes.empty() ? most_windows_ : 0;
    while (windows < most_windows_) {
      const float option = options_[rng->Below(options_.size())];
      if (option == kNoCrop) break;
      for (int a = 0; a < attempts_ && windows < most_windows_; ++a) {
        ++windows;
        float w = Between(scale_low_, scale_high_, rng);
        float h = Between(scale_low_, scale_high_, rng);
        if (ratio_low_ == ratio_high_) {
          // The longer side stays; the other follows the ratio.
          const float longest = std::max(w, h);
          w = ratio_low_ >= 1 ? longest : longest * ratio_low_;
          h = ratio_low_ >= 1 ? longest / ratio_low_ : longest;
        } else if (w / h < ratio_low_ || w / h > ratio_high_) {
          continue;
        }
        const float x = Between(0, 1 - w, rng);
        const float y = Between(0, 1 - h, rng);
        const Box candidate{x, y, x + w, y + h};
        if (!Overlaps(candidate, boxes, option)) continue;
        kept->clear();
        for (size_t k = 0; k < boxes.size(); ++k) {
          if (Keeps(candidate, boxes[k])) kept->push_back(static_cast<int>(k));
        }
        if (kept->empty()) continue;
        *window = candidate;
        return;
      }
    }
    // No crop: the whole image and every box.
    *window = Box{0, 0, 1, 1};
    kept->clear();
    for (size_t k = 0; k < boxes.size(); ++k)
      kept->push_back(static_cast<int>(k));
  }

  static float Between(float low, float high, SampleRng* rng) {
    return low + (high - low) * static_cast<float>(rng->Uniform());
  }

  float Overlap(const Box& window, const Box& box) const {
    if (iou_) return IoU(window, box);
    const float area = box.area();
    return area <= 0 ? 0.f : Intersection(window, box) / area;
  }

  bool Overlaps(const Box& window, const std::vector<Box>& boxes,
                float threshold) const {
    if (boxes.empty()) return true;
    for (const Box& box : boxes) {
      const bool holds = Overlap(window, box) >= threshold;
      if (all_ && !holds) return false;
      if (!all_ && holds) return true;
    }
    return all_;
  }

  bool Keeps(const Box& window, const Box& box) const {
    if (prune_ >= 0) {
      const float area = box.area();
      return area > 0 && Intersection(window, box) / area >= prune_;
    }
    const float cx = box.center_x(), cy = box.center_y();
    return cx >= window.l && cx <= window.r && cy >= window.t && cy <= window.b;
  }

  std::vector<float> options_;  // minimum overlaps; kNoCrop: no crop
  float scale_low_ = 1, scale_high_ = 1;
  float ratio_low_ = 1, ratio_high_ = 1;
  bool iou_ = true;
  int64_t attempts_ = 1;
  int64_t most_windows_ = kMostWindows;
  bool all_ = true;
  bool ltrb_ = true;
  float prune_ = -1;
};

}  // namespace

std::unique_ptr<MultiSampleOp> MakeRandomBboxCropOp() {
  return std::make_unique<RandomBboxCropOp>();
}

std::vector<std::string> RandomBboxCropAttrs() {
  return {"thresholds",    "threshold_type",
          "aspect_ratio",  "scaling",
          "num_attempts",  "total_num_attempts",
          "allow_no_crop", "all_boxes_above_threshold",
          "ltrb",          "bbox_prune_threshold"};
}

}  // namespace actorflow::internal::pipeline
