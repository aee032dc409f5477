#ifndef ACTORFLOW_ACTOR_ACT_CONTEXT_H_
#define ACTORFLOW_ACTOR_ACT_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "actorflow/kernel.h"
#include "proto/plan.pb.h"

// The runtime's side of the kernel API's contexts (actorflow/kernel.h):
// what they reach out of line, and the act context that fills a
// KernelContext's fields.
namespace actorflow::internal {
class InputHolder;  // held_inputs.h
}  // namespace actorflow::internal

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

struct KernelInitContext::Rep {
  const TaskProto& task;
  std::vector<KernelIo> inputs;
  std::vector<KernelIo> outputs;
  // Per output: what Init stated (SetOutputBlobs).
  std::vector<std::optional<std::vector<BlobDesc>>> inferred;
};

struct KernelContext::Rep {
  // The registers consumed (produced) under one name: [begin, end) of the
  // context's inputs (outputs).
  struct Group {
    std::string name;
    int begin = 0;
    int end = 0;
  };
  const TaskProto* task = nullptr;
  // Where ReportHeldBytes writes (the actor's; null: nowhere).
  std::atomic<int64_t>* held_bytes = nullptr;
  // The actor a kernel holds its inputs through (held_inputs.h); null
  // where an act cannot hold them.
  internal::InputHolder* holder = nullptr;
  std::vector<Group> input_groups;
  std::vector<Group> output_groups;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

namespace actorflow::internal {

// An Init context over `task` (which must outlive it).
inline KernelInitContext MakeInitContext(const TaskProto& task,
                                         std::vector<KernelIo> inputs,
                                         std::vector<KernelIo> outputs) {
  const size_t num_outputs = outputs.size();
  return KernelInitContext(
      std::unique_ptr<KernelInitContext::Rep>(new KernelInitContext::Rep{
          task, std::move(inputs), std::move(outputs),
          std::vector<std::optional<std::vector<BlobDesc>>>(num_outputs)}));
}

// The task an Init context describes: for the project's own kernels that
// read the plan itself (a fused pipeline stage splits its attributes).
inline const TaskProto& TaskOf(const KernelInitContext& ctx) {
  return ctx.rep().task;
}

// One actor's KernelContext (or one queued act's, on an asynchronous
// stream): owns the register arrays and the Rep its base points at. A copy
// points at its own.
class ActContext : public KernelContext {
 public:
  ActContext() { Repoint(); }
  ActContext(const ActContext& other)
      : KernelContext(other),
        rep_storage_(other.rep_storage_),
        input_storage_(other.input_storage_),
        output_storage_(other.output_storage_) {
    Repoint();
  }
  ActContext& operator=(const ActContext& other) {
    KernelContext::operator=(other);
    rep_storage_ = other.rep_storage_;
    input_storage_ = other.input_storage_;
    output_storage_ = other.output_storage_;
    Repoint();
    return *this;
  }

  Rep& mutable_rep() { return rep_storage_; }
  const Rep& rep() const { return rep_storage_; }
  void set_task(const TaskProto* task) { rep_storage_.task = task; }
  void set_piece_id(int64_t piece_id) { piece_id_ = piece_id; }
  void set_stream(const StreamKey& stream) { stream_ = stream; }
  void set_cuda_stream(void* stream) { cuda_stream_ = stream; }
  void set_cancelled(const std::atomic<bool>* flag) { cancelled_ = flag; }
  // Sizes the register arrays, every entry null.
  void ResizeRegisters(int inputs, int outputs) {
    input_storage_.assign(inputs, nullptr);
    output_storage_.assign(outputs, nullptr);
    Repoint();
  }
  // Set per act; as many as ResizeRegisters gave.
  // The base's pointers, which point into this object's own storage (one
  // load, not the storage's inline-or-heap test).
  RegisterBlobs** inputs() { return const_cast<RegisterBlobs**>(inputs_); }
  RegisterBlobs** outputs() { return const_cast<RegisterBlobs**>(outputs_); }

 private:
  void Repoint() {
    rep_ = &rep_storage_;
    inputs_ = input_storage_.data();
    outputs_ = output_storage_.data();
    num_inputs_ = static_cast<int32_t>(input_storage_.size());
    num_outputs_ = static_cast<int32_t>(output_storage_.size());
  }

  Rep rep_storage_;
  // Inline for the usual few: the kernel reads them on every act.
  absl::InlinedVector<RegisterBlobs*, 4> input_storage_;
  absl::InlinedVector<RegisterBlobs*, 2> output_storage_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_ACT_CONTEXT_H_
