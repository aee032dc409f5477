#include "net/job_token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace actorflow::internal::net {

absl::StatusOr<std::string> NewJobToken() {
  uint8_t bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat("job token: getrandom: ", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

void AttachJobToken(const std::string& token, grpc::ClientContext* context) {
  if (!token.empty()) context->AddMetadata(kJobTokenHeader, token);
}

grpc::Status CheckJobToken(const std::string& token,
                           const grpc::ServerContext& context,
                           const char* service) {
  if (token.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(kJobTokenHeader);
  bool same = false;
  if (it != metadata.end() && it->second.size() == token.size()) {
    // Every byte is compared whatever differs, so the time taken says
    // nothing about how much of a guess was right.
    unsigned char diff = 0;
    for (size_t i = 0; i < token.size(); ++i) {
      diff |= static_cast<unsigned char>(it->second.data()[i] ^ token[i]);
    }
    same = diff == 0;
  }
  if (same) return grpc::Status::OK;
  return grpc::Status(
      grpc::StatusCode::UNAUTHENTICATED,
      absl::StrCat(service, ": refused a call from ", context.peer(),
                   it == metadata.end()
                       ? " without this job's token (ACTORFLOW_JOB_TOKEN)"
                       : " with another job's token (ACTORFLOW_JOB_TOKEN)"));
}

}  // namespace actorflow::internal::net
