#ifndef ACTORFLOW_NET_NET_KERNELS_H_
#define ACTORFLOW_NET_NET_KERNELS_H_

#include "actorflow/kernel_bindings.h"
#include "net/transport.h"

namespace actorflow::internal::net {

// Binds the transfer tasks PartitionPlan adds to `transport`, which must
// outlive the session:
//   net_send (input "in", attr peer: the receiving rank) sends each piece;
//   net_recv (output "out", attr peer: the sending rank) is a source whose
//   pieces are the ones its peer sends, copied into its own registers.
// Neither blocks: each acts only when the transport can go on at once (a
// credit to send with; a piece that arrived), so each shares the thread of
// the task next to it.
void BindNetKernels(Transport* transport, KernelBindings* bindings);

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_NET_KERNELS_H_
