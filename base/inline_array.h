#ifndef ACTORFLOW_BASE_INLINE_ARRAY_H_
#define ACTORFLOW_BASE_INLINE_ARRAY_H_

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace actorflow::internal {

// A fixed number of T, given at construction, kept inside the object when
// there are at most N of them and on the heap otherwise. Elements are
// reached through one pointer, as a std::vector's are, with no branch on
// where they live (absl::InlinedVector tests that on every access), and
// never move: the array can be neither copied nor moved.
template <typename T, size_t N>
class InlineArray {
 public:
  InlineArray() = default;
  // Takes `items`' elements by move.
  explicit InlineArray(std::vector<T>&& items) : size_(items.size()) {
    data_ = size_ <= N ? reinterpret_cast<T*>(inline_)
                       : std::allocator<T>().allocate(size_);
    for (size_t i = 0; i < size_; ++i) {
      new (&data_[i]) T(std::move(items[i]));
    }
  }
  ~InlineArray() {
    for (size_t i = 0; i < size_; ++i) data_[i].~T();
    if (size_ > N) std::allocator<T>().deallocate(data_, size_);
  }
  InlineArray(const InlineArray&) = delete;
  InlineArray& operator=(const InlineArray&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_BASE_INLINE_ARRAY_H_
