// NonMaxSuppression (cgc/kernels/dynamic.h), computed the way ONNX Runtime
// does (onnxruntime/core/providers/cpu/object_detection/non_max_suppression.cc),
// so that a detector compiled by cgc keeps the same boxes: candidates above
// the score threshold in descending score, ties by the lower index; a
// candidate is kept unless its IoU with a box kept before in its class is
// above the IoU threshold; boxes of no area never suppress.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cgc/kernels/dynamic.h"

namespace cgc::rt {
namespace {

struct Corners {
  float xMin, yMin, xMax, yMax;
};

Corners corners(const float* box, bool centerPointBox) {
  if (centerPointBox) {
    const float halfWidth = box[2] / 2, halfHeight = box[3] / 2;
    return {box[0] - halfWidth, box[1] - halfHeight, box[0] + halfWidth, box[1] + halfHeight};
  }
  // [y1, x1, y2, x2], either diagonal.
  return {std::min(box[1], box[3]), std::min(box[0], box[2]), std::max(box[1], box[3]),
          std::max(box[0], box[2])};
}

bool suppresses(const Corners& a, const Corners& b, float iouThreshold) {
  const float xMin = std::max(a.xMin, b.xMin), xMax = std::min(a.xMax, b.xMax);
  if (xMax <= xMin) return false;
  const float yMin = std::max(a.yMin, b.yMin), yMax = std::min(a.yMax, b.yMax);
  if (yMax <= yMin) return false;
  const float intersection = (xMax - xMin) * (yMax - yMin);
  if (intersection <= 0.0f) return false;
  const float areaA = (a.xMax - a.xMin) * (a.yMax - a.yMin);
  const float areaB = (b.xMax - b.xMin) * (b.yMax - b.yMin);
  const float unionArea = areaA + areaB - intersection;
  if (areaA <= 0.0f || areaB <= 0.0f || unionArea <= 0.0f) return false;
  return intersection / unionArea > iouThreshold;
}

}  // namespace

Status non_max_suppression(const NmsParams& p, const float* boxes, const Extents* boxes_extents,
                           const float* scores, const int64_t* max_output,
                           const float* iou_threshold, const float* score_threshold,
                           int64_t* selected, Extents* extents) {
  // Boxes past a data-dependent count are padding, never candidates.
  const int64_t count =
      boxes_extents ? std::clamp<int64_t>(boxes_extents->dims[0], 0, p.boxes) : p.boxes;
  std::memset(selected, 0, static_cast<size_t>(p.bound * 3) * sizeof(int64_t));
  const int64_t maxPerClass = max_output ? std::max<int64_t>(max_output[0], 0) : 0;
  const float iou = iou_threshold ? iou_threshold[0] : 0.0f;
  int64_t rows = 0;
  Status status = Status::kOk;
  std::vector<int64_t> candidates, kept;
  std::vector<Corners> box(static_cast<size_t>(p.boxes));
  for (int64_t b = 0; b < p.batches && maxPerClass > 0; ++b) {
    for (int64_t i = 0; i < p.boxes; ++i)
      box[static_cast<size_t>(i)] = corners(boxes + (b * p.boxes + i) * 4, p.center_point_box);
    for (int64_t c = 0; c < p.classes; ++c) {
      const float* score = scores + (b * p.classes + c) * p.boxes;
      candidates.clear();
      for (int64_t i = 0; i < count; ++i)
        if (!score_threshold || score[i] > score_threshold[0]) candidates.push_back(i);
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t x, int64_t y) { return score[x] > score[y]; });
      kept.clear();
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= maxPerClass) break;
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](int64_t k) {
          return suppresses(box[static_cast<size_t>(i)], box[static_cast<size_t>(k)], iou);
        });
        if (suppressed) continue;
        kept.push_back(i);
        if (rows == p.bound) {
          status = Status::kSizeBeyondBound;
          continue;
        }
        int64_t* row = selected + rows++ * 3;
        row[0] = b;
        row[1] = c;
        row[2] = i;
      }
    }
  }
  extents->dims[0] = rows;
  return status;
}

}  // namespace cgc::rt
