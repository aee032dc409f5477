#ifndef ACTORFLOW_NET_JOB_CREDENTIALS_H_
#define ACTORFLOW_NET_JOB_CREDENTIALS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace actorflow::internal::net {

// The PEM files of a job's TLS: this rank's certificate and key, and the CA
// that signed every rank's. All empty: plaintext.
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string ca;
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// Both sides of a job's connections. With TLS, the server presents `cert`
// and, when `ca` is given, requires and verifies a client certificate
// signed by it (mutual TLS); clients verify the server against `ca` and
// present `cert`. Without it, plaintext.
struct JobCredentials {
  std::shared_ptr<grpc::ServerCredentials> server;
  std::shared_ptr<grpc::ChannelCredentials> channel;
};

// The credentials for `files`; errors name the file that cannot be read
// and what is missing (a certificate needs its key, and a CA to verify
// peers with).
absl::StatusOr<JobCredentials> MakeJobCredentials(const TlsFiles& files);

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_JOB_CREDENTIALS_H_
