#ifndef ACTORFLOW_NET_JOB_TOKEN_H_
#define ACTORFLOW_NET_JOB_TOKEN_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/statusor.h"

namespace actorflow::internal::net {

// The metadata key that carries a job's token on every call between ranks.
inline constexpr char kJobTokenHeader[] = "actorflow-job-token";

// A fresh token: 128 bits from the kernel's random source, as hex.
absl::StatusOr<std::string> NewJobToken();

// Puts `token` on a call (nothing when it is empty).
void AttachJobToken(const std::string& token, grpc::ClientContext* context);

// OK when `token` is empty or the call carries it; else UNAUTHENTICATED,
// naming the service and the peer. Compares in constant time.
grpc::Status CheckJobToken(const std::string& token,
                           const grpc::ServerContext& context,
                           const char* service);

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_JOB_TOKEN_H_
