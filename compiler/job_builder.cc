#include "actorflow/job_builder.h"

#include "plan/plan_builder.h"
#include "plan/plan_util.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::BoolAttr;
using ::actorflow::internal::FloatAttr;
using ::actorflow::internal::IntAttr;
using ::actorflow::internal::StringAttr;
using ::actorflow::internal::ToProto;

ParallelSignature SplitSignature(int axis) {
  ParallelSignature sig;
  sig.set_split(axis);
  return sig;
}

ParallelSignature BroadcastSignature() {
  ParallelSignature sig;
  sig.set_broadcast(true);
  return sig;
}

ParallelSignature PartialSumSignature() {
  ParallelSignature sig;
  sig.set_partial_sum(true);
  return sig;
}

using OpHandle = JobBuilder::OpHandle;

JobBuilder::OpHandle JobBuilder::Op(const std::string& name,
                                    const std::string& op_type) {
  OpConf* conf = job_.add_op();
  conf->set_name(name);
  conf->set_op_type(op_type);
  return OpHandle(conf);
}

OpHandle& OpHandle::Input(const std::string& input) {
  conf_->add_input(input);
  // Signatures are all given or none: keep the list as long as the inputs
  // once any was.
  if (!conf_->input_signature().empty()) conf_->add_input_signature();
  return *this;
}

OpHandle& OpHandle::Attr(const std::string& name, double value) {
  return Attr(name, FloatAttr(value));
}
OpHandle& OpHandle::Attr(const std::string& name, int64_t value) {
  return Attr(name, IntAttr(value));
}
OpHandle& OpHandle::Attr(const std::string& name, const std::string& value) {
  return Attr(name, StringAttr(value));
}
OpHandle& OpHandle::Attr(const std::string& name, bool value) {
  return Attr(name, BoolAttr(value));
}
OpHandle& OpHandle::Attr(const std::string& name, const AttrValue& value) {
  (*conf_->mutable_attr())[name] = value;
  return *this;
}

OpHandle& OpHandle::Shape(const std::vector<int64_t>& shape) {
  conf_->clear_shape();
  for (int64_t d : shape) conf_->add_shape(d);
  return *this;
}

OpHandle& OpHandle::Blob(const BlobDescProto& blob) {
  *conf_->add_blob() = blob;
  return *this;
}

OpHandle& OpHandle::Place(DeviceKind kind, const std::vector<int32_t>& devices,
                          const std::vector<int32_t>& machines) {
  Placement* p = conf_->mutable_placement();
  p->set_device_type(ToProto(kind));
  p->clear_device_id();
  p->clear_machine_id();
  for (int32_t d : devices) p->add_device_id(d);
  for (int32_t m : machines) p->add_machine_id(m);
  return *this;
}

OpHandle& OpHandle::Replicas(int n) {
  conf_->mutable_placement()->set_replicas(n);
  return *this;
}

ParallelSignature* OpHandle::LastInputSignature() {
  // Entries without a kind are inferred (OpConf.input_signature).
  while (conf_->input_signature_size() < conf_->input_size()) {
    conf_->add_input_signature();
  }
  return conf_->mutable_input_signature(conf_->input_size() - 1);
}

OpHandle& OpHandle::InputSplit(int axis) {
  return InputSignature(SplitSignature(axis));
}
OpHandle& OpHandle::InputBroadcast() {
  return InputSignature(BroadcastSignature());
}
OpHandle& OpHandle::InputPartialSum() {
  return InputSignature(PartialSumSignature());
}
OpHandle& OpHandle::InputSignature(const ParallelSignature& signature) {
  *LastInputSignature() = signature;
  return *this;
}

OpHandle& OpHandle::OutputSignature(const std::string& name,
                                    const ParallelSignature& signature) {
  (*conf_->mutable_output_signature())[name] = signature;
  return *this;
}

OpHandle& OpHandle::Stage(int stage) {
  conf_->set_stage(stage);
  return *this;
}

OpHandle& OpHandle::Initial() {
  conf_->set_initial(true);
  return *this;
}

OpHandle& OpHandle::Output(const std::string& name) {
  conf_->add_output(name);
  return *this;
}

OpHandle& OpHandle::RegisterNum(const std::string& name, int num) {
  (*conf_->mutable_register_num())[name] = num;
  return *this;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
