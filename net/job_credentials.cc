#include "net/job_credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::net {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": cannot read ", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", path, " is not a PEM file"));
  }
  return text.str();
}

}  // namespace

absl::StatusOr<JobCredentials> MakeJobCredentials(const TlsFiles& files) {
  JobCredentials made;
  if (!files.enabled()) {
    made.server = grpc::InsecureServerCredentials();
    made.channel = grpc::InsecureChannelCredentials();
    return made;
  }
  if (files.cert.empty() || files.key.empty() || files.ca.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs all three of --tls-cert, --tls-key and --tls-ca (this "
        "rank's certificate and key, and the CA that signed every rank's)");
  }
  absl::StatusOr<std::string> cert = ReadPem(files.cert, "tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(files.key, "tls-key");
  if (!key.ok()) return key.status();
  absl::StatusOr<std::string> ca = ReadPem(files.ca, "tls-ca");
  if (!ca.ok()) return ca.status();
  grpc::SslServerCredentialsOptions server(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  server.pem_root_certs = *ca;
  server.pem_key_cert_pairs.push_back({*key, *cert});
  made.server = grpc::SslServerCredentials(server);
  grpc::SslCredentialsOptions channel;
  channel.pem_root_certs = *ca;
  channel.pem_private_key = *key;
  channel.pem_cert_chain = *cert;
  made.channel = grpc::SslCredentials(channel);
  return made;
}

}  // namespace actorflow::internal::net
