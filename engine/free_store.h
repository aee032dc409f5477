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
// lock. Here a thread collects what it frees in a list of its own and hands
// it on in batches to a shared lock-free stack, and an allocating thread
// takes the whole stack at once into its own cache. Taking everything (never
// popping one) is what keeps the stack free of ABA; batching is what keeps
// the stack's cache line from moving between cores on every free.
// Memory goes back to the system only when the process ends.
//
// Use: give the class `static void* operator new(size_t)` and
// `static void operator delete(void*, size_t)` that call Allocate/Free.
template <typename T>
class FreeStore {
 public:
  static void* Allocate(size_t size) {
    if (size != sizeof(T) || kBypass) {
      return ::operator new(size, std::align_val_t(alignof(T)));
    }
    Cache& cache = ThreadCache();
    if (cache.head == nullptr) {
      // What this thread freed is still in its cache: use that first.
      cache.head = cache.freed;
      cache.freed = cache.freed_tail = nullptr;
      cache.freed_count = 0;
      if (cache.head == nullptr) {
        cache.head = SharedStack().exchange(nullptr, std::memory_order_acquire);
      }
      if (cache.head == nullptr) cache.head = NewSlab();
    }
    Node* node = cache.head;
    cache.head = node->next;
    // The next object is most likely in another core's cache (a worker
    // freed it): start moving it here now, while this one is in use.
    if (cache.head != nullptr) {
      for (size_t offset = 0; offset < sizeof(Node); offset += 64) {
        PrefetchForWrite(reinterpret_cast<char*>(cache.head) + offset);
      }
    }
    return node;
  }

  static void Free(void* ptr, size_t size) {
    if (size != sizeof(T) || kBypass) {
      ::operator delete(ptr, std::align_val_t(alignof(T)));
      return;
    }
    Cache& cache = ThreadCache();
    Node* node = static_cast<Node*>(ptr);
    node->next = cache.freed;
    if (cache.freed == nullptr) cache.freed_tail = node;
    cache.freed = node;
    if (++cache.freed_count == kBatch) {
      Push(cache.freed, cache.freed_tail);
      cache.freed = cache.freed_tail = nullptr;
      cache.freed_count = 0;
    }
  }

 private:
  // Under AddressSanitizer every object gets fresh memory, so that a use
  // after free is still caught.
#if defined(ABSL_HAVE_ADDRESS_SANITIZER)
  static constexpr bool kBypass = true;
#else
  static constexpr bool kBypass = false;
#endif
  // Frees a thread keeps before handing them on: few enough that memory
  // parked in idle threads stays small.
  static constexpr int kBatch = 32;

  // Asks for the line in a state that can be written (x86's PREFETCHW,
  // which a plain write prefetch is not without -mprfchw): a line another
  // core wrote last then arrives without a second round trip to take it.
  static void PrefetchForWrite(const char* address) {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*address));
#else
    __builtin_prefetch(address, 1);
#endif
  }

  union Node {
    Node* next;
    alignas(T) unsigned char storage[sizeof(T)];
  };

  // Objects come from the heap this many at a time, in one allocation: an
  // aligned allocation per object would leave a small fragment of the
  // heap behind each, scattering the process's other small objects.
  static constexpr size_t kSlabNodes = 64;

  // A new slab's nodes, chained through next.
  static Node* NewSlab() {
    auto* slab = static_cast<Node*>(::operator new(
        kSlabNodes * sizeof(Node), std::align_val_t(alignof(Node))));
    for (size_t i = 0; i + 1 < kSlabNodes; ++i) slab[i].next = &slab[i + 1];
    slab[kSlabNodes - 1].next = nullptr;
    return slab;
  }

  // What the thread took or freed but has not used or handed on yet; handed
  // back when it exits.
  struct Cache {
    Node* head = nullptr;   // to allocate from
    Node* freed = nullptr;  // freed here, not yet handed on
    Node* freed_tail = nullptr;
    int freed_count = 0;
    ~Cache() {
      if (freed != nullptr) Push(freed, freed_tail);
      if (head == nullptr) return;
      Node* last = head;
      while (last->next != nullptr) last = last->next;
      Push(head, last);
    }
  };

  // On a cache line of its own: each type's stack is written by other
  // threads than the other types'.
  struct alignas(64) Stack {
    std::atomic<Node*> top{nullptr};
  };
  static std::atomic<Node*>& SharedStack() {
    static Stack stack;
    return stack.top;
  }
  static Cache& ThreadCache() {
    static thread_local Cache cache;
    return cache;
  }
  // Links first..last (chained through next) onto the shared stack.
  static void Push(Node* first, Node* last) {
    std::atomic<Node*>& shared = SharedStack();
    Node* head = shared.load(std::memory_order_relaxed);
    do {
      last->next = head;
    } while (!shared.compare_exchange_weak(
        head, first, std::memory_order_release, std::memory_order_relaxed));
  }
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_FREE_STORE_H_
