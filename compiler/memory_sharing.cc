#include "compiler/memory_sharing.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace actorflow::internal {

int SingleBufferInWindows(const RegisterLifetimes& lifetimes, Plan* plan) {
  int cut = 0;
  for (TaskProto& task : *plan->mutable_task()) {
    for (auto& [key, desc] : *task.mutable_produced_regst_desc()) {
      if (desc.register_num() > 1 && lifetimes.InWindow(desc.regst_desc_id())) {
        desc.set_register_num(1);
        ++cut;
      }
    }
  }
  return cut;
}

MemorySharing ShareMemory(const RegisterLifetimes& lifetimes,
                          const std::map<int64_t, int64_t>& bytes, Plan* plan) {
  struct Candidate {
    int64_t bytes = 0;
    RegisterDescProto* desc = nullptr;
  };
  std::vector<Candidate> candidates;
  // A process validates its own share of the plan, where a path through
  // another machine that orders two registers is not there to see: plans
  // over several machines share nothing (yet).
  for (const TaskProto& task : plan->task()) {
    if (task.stream().machine_id() != 0) return {};
  }
  for (TaskProto& task : *plan->mutable_task()) {
    for (auto& [key, desc] : *task.mutable_produced_regst_desc()) {
      desc.set_mem_block_id(0);
      auto size = bytes.find(desc.regst_desc_id());
      if (desc.register_num() != 1 || size == bytes.end() ||
          !lifetimes.InWindow(desc.regst_desc_id())) {
        continue;
      }
      candidates.push_back({size->second, &desc});
    }
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return a.bytes > b.bytes; });
  struct Block {
    int64_t bytes = 0;  // its first (largest) member's
    std::vector<Candidate*> members;
  };
  std::vector<Block> blocks;
  for (Candidate& c : candidates) {
    Block* home = nullptr;
    for (Block& block : blocks) {
      const bool fits = std::all_of(
          block.members.begin(), block.members.end(), [&](Candidate* m) {
            return lifetimes.Disjoint(m->desc->regst_desc_id(),
                                      c.desc->regst_desc_id());
          });
      if (fits) {
        home = &block;
        break;
      }
    }
    if (home == nullptr) {
      blocks.push_back({c.bytes, {}});
      home = &blocks.back();
    }
    home->members.push_back(&c);
  }
  MemorySharing result;
  for (Block& block : blocks) {
    if (block.members.size() < 2) continue;
    ++result.blocks;
    for (Candidate* m : block.members) {
      m->desc->set_mem_block_id(result.blocks);
      ++result.registers;
      result.bytes_saved += m->bytes;
    }
    result.bytes_saved -= block.bytes;
  }
  return result;
}

}  // namespace actorflow::internal
