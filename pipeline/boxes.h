#ifndef ACTORFLOW_PIPELINE_BOXES_H_
#define ACTORFLOW_PIPELINE_BOXES_H_

#include <algorithm>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/sample.h"

// Axis-aligned boxes as DALI's detection operators take them: a float32
// sample of [N, 4] (or an empty one), each row (left, top, right, bottom),
// "ltrb", or (x, y, width, height), "xywh"; coordinates relative to the
// image, so [0, 1] is the whole image.
namespace actorflow::internal::pipeline {

struct Box {
  float l = 0, t = 0, r = 0, b = 0;

  float width() const { return r - l; }
  float height() const { return b - t; }
  float area() const {
    return std::max(0.f, width()) * std::max(0.f, height());
  }
  float center_x() const { return 0.5f * (l + r); }
  float center_y() const { return 0.5f * (t + b); }
};

inline float Intersection(const Box& a, const Box& b) {
  const float w = std::min(a.r, b.r) - std::max(a.l, b.l);
  const float h = std::min(a.b, b.b) - std::max(a.t, b.t);
  return w <= 0 || h <= 0 ? 0.f : w * h;
}

// Intersection over union; 0 for two empty boxes.
inline float IoU(const Box& a, const Box& b) {
  const float inter = Intersection(a, b);
  const float total = a.area() + b.area() - inter;
  return total <= 0 ? 0.f : inter / total;
}

// `op` names the operator in errors.
inline absl::StatusOr<std::vector<Box>> ReadBoxes(const SampleRef& in,
                                                  bool ltrb, const char* op) {
  const int64_t count = ShapeElemCnt(in.shape);
  if (in.type != DT_FLOAT32 ||
      (count > 0 && (in.shape.empty() || in.shape.back() != 4))) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": takes boxes, float32 [N, 4], got ",
                     DataTypeName(in.type), " of ", count, " values",
                     count > 0 && !in.shape.empty()
                         ? absl::StrCat(" in rows of ", in.shape.back())
                         : ""));
  }
  std::vector<Box> boxes(static_cast<size_t>(count / 4));
  const float* v = in.as<float>();
  for (size_t i = 0; i < boxes.size(); ++i, v += 4) {
    boxes[i] = ltrb ? Box{v[0], v[1], v[2], v[3]}
                    : Box{v[0], v[1], v[0] + v[2], v[1] + v[3]};
  }
  return boxes;
}

// As [N, 4] in `ltrb` or xywh.
inline void WriteBoxes(const std::vector<Box>& boxes, bool ltrb, Sample* out) {
  const int64_t shape[] = {static_cast<int64_t>(boxes.size()), 4};
  out->Reshape(DT_FLOAT32, shape);
  float* v = out->as<float>();
  for (const Box& box : boxes) {
    v[0] = box.l;
    v[1] = box.t;
    v[2] = ltrb ? box.r : box.width();
    v[3] = ltrb ? box.b : box.height();
    v += 4;
  }
}

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_BOXES_H_
