#ifndef ACTORFLOW_ENGINE_FREE_STORE_H_
#define ACTORFLOW_ENGINE_FREE_STORE_H_

#include <atomic>
#include <cstddef>
#include <new>

#include "absl/base/config.h"

namespace actorflow::engine {

// Recycled memory for one engine object type, so that a push allocates
// nothing in steady state. Engine objects are made on the pushing thread and
// freed on a worker; through malloc every such free takes the pusher's arena
// lock. Here a free pushes the block on a shared lock-free stack, and an
// allocating thread takes the whole stack at once into its own cache. Taking
// everything (never popping one) is what keeps the stack free of ABA.
// Memory goes back to the system only when the process ends.
//
// Use: give the class `static void* operator new(size_t)` and
// `static void operator delete(void*)` that call Allocate/Free.
template <typename T>
class FreeStore {
 public:
  static void* Allocate(size_t size) {
    if (size != sizeof(T) || kBypass) return ::operator new(size);
    Cache& cache = ThreadCache();
    if (cache.head == nullptr) {
      cache.head = Shared().exchange(nullptr, std::memory_order_acquire);
      if (cache.head == nullptr) return ::operator new(sizeof(Node));
    }
    Node* node = cache.head;
    cache.head = node->next;
    return node;
  }

  static void Free(void* ptr, size_t size) {
    if (size != sizeof(T) || kBypass) {
      ::operator delete(ptr);
      return;
    }
    Push(static_cast<Node*>(ptr), static_cast<Node*>(ptr));
  }

 private:
  // Under AddressSanitizer every object gets fresh memory, so that a use
  // after free is still caught.
#if defined(ABSL_HAVE_ADDRESS_SANITIZER)
  static constexpr bool kBypass = true;
#else
  static constexpr bool kBypass = false;
#endif

  union Node {
    Node* next;
    alignas(T) unsigned char storage[sizeof(T)];
  };

  // What the thread took but has not used yet; handed back when it exits.
  struct Cache {
    Node* head = nullptr;
    ~Cache() {
      if (head == nullptr) return;
      Node* last = head;
      while (last->next != nullptr) last = last->next;
      Push(head, last);
    }
  };

  static std::atomic<Node*>& Shared() {
    static std::atomic<Node*> shared{nullptr};
    return shared;
  }
  static Cache& ThreadCache() {
    static thread_local Cache cache;
    return cache;
  }
  // Links first..last (chained through next) onto the shared stack.
  static void Push(Node* first, Node* last) {
    std::atomic<Node*>& shared = Shared();
    Node* head = shared.load(std::memory_order_relaxed);
    do {
      last->next = head;
    } while (!shared.compare_exchange_weak(
        head, first, std::memory_order_release, std::memory_order_relaxed));
  }
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_FREE_STORE_H_
