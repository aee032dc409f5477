#ifndef ACTORFLOW_PIPELINE_SAMPLE_H_
#define ACTORFLOW_PIPELINE_SAMPLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "actorflow/blob_desc.h"
#include "actorflow/data_type.h"

namespace actorflow::internal::pipeline {

using SampleShape = absl::InlinedVector<int64_t, 4>;

// An allocator whose resize leaves new bytes uninitialized: a sample's
// buffer is always written whole after Reshape, and zeroing it first cost
// a pass over every image (scratch buffers grow and shrink per sample).
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialized: no zeroing
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Bytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

// One sample read-only: what an operator function takes. Images are HWC.
struct SampleRef {
  DataType type = DT_UINT8;
  absl::Span<const int64_t> shape;
  const uint8_t* data = nullptr;
  int64_t bytes = 0;

  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data);
  }
};

// One sample an operator function writes. Its storage is kept between
// samples, so a stage that reuses one Sample stops allocating once it has
// seen its largest sample.
struct Sample {
  DataType type = DT_UINT8;
  SampleShape shape;
  Bytes storage;

  // Sets type and shape and sizes the storage (contents unspecified).
  void Reshape(DataType new_type, absl::Span<const int64_t> new_shape) {
    type = new_type;
    shape.assign(new_shape.begin(), new_shape.end());
    storage.resize(static_cast<size_t>(ShapeElemCnt(shape)) *
                   DataTypeSize(type));
  }
  int64_t bytes() const { return static_cast<int64_t>(storage.size()); }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(storage.data());
  }
  SampleRef ref() const {
    return SampleRef{type, shape, storage.data(), bytes()};
  }
};

// Per-sample randomness that depends only on the pipeline's seed, the
// operator, the epoch and the sample's position in the epoch: so batches are
// bit-identical whatever thread runs the sample and however far ahead the
// pipeline is. splitmix64 steps.
class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t op, uint64_t epoch, uint64_t position)
      : state_(Mix(Mix(Mix(seed) ^ op) ^ epoch) ^ position),
        seed_(seed),
        epoch_(epoch),
        position_(position) {}
  SampleRng() : SampleRng(0, 0, 0, 0) {}

  // The same sample's generator for random value `stream` (a value several
  // operators share): every operator given it draws the same numbers. Its
  // op part lies above any operator's index.
  SampleRng ForStream(uint64_t stream) const {
    return SampleRng(seed_, (uint64_t{1} << 62) ^ stream, epoch_, position_);
  }

  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return Mix(state_);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n), n > 0.
  int64_t Below(int64_t n) {
    return static_cast<int64_t>(Uniform() * static_cast<double>(n));
  }

 private:
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  uint64_t seed_, epoch_, position_;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SAMPLE_H_
