#ifndef ACTORFLOW_JOB_BUILDER_H_
#define ACTORFLOW_JOB_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/proto/job.pb.h"
#include "actorflow/stream_key.h"
#include "actorflow/version.h"

// Writing a Job (actorflow/proto/job.pb.h) in code, to compile with
// CompileJob (actorflow/job_compiler.h).
//
// A JobBuilder owns its Job; an OpHandle points at one operator in it and
// is valid while the builder lives and that operator stays in the Job
// (later Op calls keep it). Neither is thread-safe. Nothing is checked while
// writing: CompileJob names every problem, with the operator and the input.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// For example:
//
//   JobBuilder job(1000);
//   job.Op("source", "source").Shape({256}).Attr("value", 1.0);
//   job.Op("double", "scale").Input("source").Attr("factor", 2.0)
//       .Place(DeviceKind::kCpu, {0, 1});
//   job.Op("sink", "checksum").Input("double");
//   absl::StatusOr<CompiledJob> plan = CompileJob(job.job());
//
// Op returns a handle to the operator just added; its setters return the
// handle again.
class JobBuilder {
 public:
  class OpHandle {
   public:
    explicit OpHandle(OpConf* conf) : conf_(conf) {}
    // "producer.output", "producer" (its "out"), or "key=producer.output".
    OpHandle& Input(const std::string& input);
    OpHandle& Attr(const std::string& name, double value);
    OpHandle& Attr(const std::string& name, int64_t value);
    OpHandle& Attr(const std::string& name, int value) {
      return Attr(name, static_cast<int64_t>(value));
    }
    OpHandle& Attr(const std::string& name, const std::string& value);
    OpHandle& Attr(const std::string& name, const char* value) {
      return Attr(name, std::string(value));
    }
    OpHandle& Attr(const std::string& name, bool value);
    OpHandle& Attr(const std::string& name, const AttrValue& value);
    // One float32 blob "data" of this shape for output "out".
    OpHandle& Shape(const std::vector<int64_t>& shape);
    OpHandle& Blob(const BlobDescProto& blob);
    // Placement: `devices` of `kind` on each of `machines`.
    OpHandle& Place(DeviceKind kind, const std::vector<int32_t>& devices,
                    const std::vector<int32_t>& machines = {0});
    // `n` towers on each device of the placement (Placement.replicas).
    OpHandle& Replicas(int n);
    // The signature of the input last added, or of output `name`.
    OpHandle& InputSplit(int axis);
    OpHandle& InputBroadcast();
    OpHandle& InputPartialSum();
    OpHandle& InputSignature(const ParallelSignature& signature);
    OpHandle& OutputSignature(const std::string& name,
                              const ParallelSignature& signature);
    OpHandle& Stage(int stage);
    OpHandle& Initial();
    OpHandle& Output(const std::string& name);
    // Exactly `num` buffers for output `name`'s register.
    OpHandle& RegisterNum(const std::string& name, int num);
    OpConf* conf() { return conf_; }

   private:
    ParallelSignature* LastInputSignature();
    OpConf* conf_;
  };

  explicit JobBuilder(int64_t total_piece_num = 0) {
    job_.set_total_piece_num(total_piece_num);
  }
  OpHandle Op(const std::string& name, const std::string& op_type);
  Job& job() { return job_; }

 private:
  Job job_;
};

ParallelSignature SplitSignature(int axis);
ParallelSignature BroadcastSignature();
ParallelSignature PartialSumSignature();

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_JOB_BUILDER_H_
