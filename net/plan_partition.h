#ifndef ACTORFLOW_NET_PLAN_PARTITION_H_
#define ACTORFLOW_NET_PLAN_PARTITION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/plan.pb.h"

namespace actorflow::internal::net {

// A register that crosses machines: produced on `src_rank`, read by tasks
// on `dst_rank`. The producer's side gets a `net_send` task that consumes
// it; the reader's side gets a `net_recv` task that produces a mirror
// descriptor with the same regst_desc_id, blobs and register_num, which
// the readers there consume instead.
struct NetEdge {
  int64_t regst_desc_id = 0;
  int32_t src_rank = 0;
  int32_t dst_rank = 0;
  int32_t register_num = 0;  // the mirror's: pieces in flight on the wire
  int64_t send_task_id = 0;
  int64_t recv_task_id = 0;
  // The sender compresses the register's blobs with zstd (JobConfig::
  // net_compress); a blob that does not shrink goes as it is.
  bool compress = false;
};

// One rank's share of a multi-machine plan.
struct LocalPlan {
  // Only this rank's tasks plus its net_send and net_recv tasks; every
  // stream's machine_id is 0 (the local process).
  Plan plan;
  std::vector<NetEdge> sends;  // edges this rank sends on
  std::vector<NetEdge> recvs;  // edges this rank receives on
};

// Every machine-crossing register of `plan`, in order of regst_desc_id,
// then destination. Errors (InvalidArgument, one problem per line, each
// naming the task or register): a machine_id outside [0, world_size), a
// crossing register in device memory or one that is initial_register.
absl::StatusOr<std::vector<NetEdge>> FindNetEdges(const Plan& plan,
                                                  int world_size);

// `plan` must carry every produced descriptor's blobs (a CompiledPlan's
// plan does). Deterministic: every rank computes the same task ids.
absl::StatusOr<LocalPlan> PartitionPlan(const Plan& plan, int rank,
                                        int world_size);

// The highest machine_id any task uses (0 for an empty plan).
int32_t MaxMachineId(const Plan& plan);

// The task names of the net tasks, for messages and tests.
std::string NetSendName(const NetEdge& edge);
std::string NetRecvName(const NetEdge& edge);

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_PLAN_PARTITION_H_
