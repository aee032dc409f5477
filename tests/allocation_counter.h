#ifndef ACTORFLOW_TESTS_ALLOCATION_COUNTER_H_
#define ACTORFLOW_TESTS_ALLOCATION_COUNTER_H_

#include <cstdint>

namespace actorflow::internal::testing {

// Heap allocations made so far by this process through any form of
// operator new. A test binary that links //tests:allocation_counter gets
// counting replacements of the global allocation functions.
int64_t AllocationCount();

}  // namespace actorflow::internal::testing

#endif  // ACTORFLOW_TESTS_ALLOCATION_COUNTER_H_
