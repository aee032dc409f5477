#include "net/job_config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace actorflow::internal::net {
namespace {

const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// An integer environment variable; `found` says whether it was set.
absl::StatusOr<int64_t> EnvInt(const char* name, bool* found) {
  const char* value = Env(name);
  *found = value != nullptr;
  if (!*found) return 0;
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": needs a whole number, got '", value, "'"));
  }
  return parsed;
}

// One launcher's variables for the rank and size, and for the local ones.
struct Source {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

constexpr Source kSources[] = {
    {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

// Slurm's tasks on node `node` from SLURM_TASKS_PER_NODE ("2(x3),1": two
// on each of the first three nodes, one on the fourth); 0 when unknown.
int64_t SlurmTasksOnNode(int64_t node) {
  const char* spec = Env("SLURM_STEP_TASKS_PER_NODE");
  if (spec == nullptr) spec = Env("SLURM_TASKS_PER_NODE");
  if (spec == nullptr || node < 0) return 0;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    int64_t tasks = 0, repeat = 1;
    std::pair<absl::string_view, absl::string_view> split =
        absl::StrSplit(part, absl::MaxSplits("(x", 1));
    if (!absl::SimpleAtoi(split.first, &tasks)) return 0;
    if (!split.second.empty()) {
      absl::string_view count = split.second;
      if (!absl::ConsumeSuffix(&count, ")") ||
          !absl::SimpleAtoi(count, &repeat)) {
        return 0;
      }
    }
    if (node < repeat) return tasks;
    node -= repeat;
  }
  return 0;
}

// Expands one host-list item: a name with zero or more [ranges] groups.
absl::Status ExpandItem(absl::string_view item, const std::string& list,
                        std::vector<std::string>* out) {
  std::vector<std::string> done = {""};
  while (!item.empty()) {
    const size_t open = item.find('[');
    const std::string prefix(item.substr(0, open));
    for (std::string& name : done) name += prefix;
    if (open == absl::string_view::npos) break;
    const size_t close = item.find(']', open);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("host list '", list, "': '[' without ']'"));
    }
    std::vector<std::string> values;
    for (absl::string_view range :
         absl::StrSplit(item.substr(open + 1, close - open - 1), ',')) {
      std::pair<absl::string_view, absl::string_view> ends =
          absl::StrSplit(range, absl::MaxSplits('-', 1));
      if (ends.second.empty()) ends.second = ends.first;
      int64_t lo = 0, hi = 0;
      if (!absl::SimpleAtoi(ends.first, &lo) ||
          !absl::SimpleAtoi(ends.second, &hi) || lo < 0 || hi < lo ||
          hi - lo > 100000) {
        return absl::InvalidArgumentError(absl::StrCat(
            "host list '", list, "': '", range, "' is not a range N or N-M"));
      }
      const size_t width = ends.first.size();  // "01-10": two digits
      for (int64_t v = lo; v <= hi; ++v) {
        std::string digits = absl::StrCat(v);
        if (digits.size() < width) {
          digits.insert(0, width - digits.size(), '0');
        }
        values.push_back(std::move(digits));
      }
    }
    std::vector<std::string> grown;
    for (const std::string& name : done) {
      for (const std::string& value : values) grown.push_back(name + value);
    }
    done = std::move(grown);
    item.remove_prefix(close + 1);
  }
  for (std::string& name : done) out->push_back(std::move(name));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostList(
    const std::string& list) {
  std::vector<std::string> hosts;
  // Items are split at commas outside brackets.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("host list '", list, "': unbalanced brackets"));
    }
    if (c != ',' || depth != 0) continue;
    const absl::string_view item(list.data() + start, i - start);
    start = i + 1;
    if (item.empty()) continue;
    absl::Status ok = ExpandItem(item, list, &hosts);
    if (!ok.ok()) return ok;
  }
  if (depth != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("host list '", list, "': '[' without ']'"));
  }
  if (hosts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("host list '", list, "' names no host"));
  }
  return hosts;
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || absl::StartsWith(host, "127.") ||
         host == "::1" || host == "[::1]";
}

absl::Status Resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found != nullptr) freeaddrinfo(found);
  if (error == 0) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("cannot resolve '", host, "': ", gai_strerror(error)));
}

bool ResolvesOnlyToLoopback(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool only = found != nullptr;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      const uint32_t ip = ntohl(
          reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr.s_addr);
      only = only && (ip >> 24) == 127;
    } else if (ai->ai_family == AF_INET6) {
      only =
          only &&
          IN6_IS_ADDR_LOOPBACK(
              &reinterpret_cast<const sockaddr_in6*>(ai->ai_addr)->sin6_addr);
    }
  }
  freeaddrinfo(found);
  return only;
}

absl::StatusOr<std::string> RouteAddressTo(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int error = getaddrinfo(host.c_str(), "9", &hints, &found);
  if (error != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot resolve master address '", host, "': ", gai_strerror(error)));
  }
  std::string address;
  std::string problem = "no address";
  for (addrinfo* ai = found; ai != nullptr && address.empty();
       ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, SOCK_DGRAM, 0);
    if (fd < 0) continue;
    // Connecting a datagram socket picks the route and the source address
    // and sends nothing.
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    char text[INET6_ADDRSTRLEN] = {};
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      problem = std::strerror(errno);
    } else if (local.ss_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr,
                text, sizeof(text));
      address = text;
    } else {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr,
                text, sizeof(text));
      address = absl::StrCat("[", text, "]");
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (address.empty()) {
    return absl::UnavailableError(
        absl::StrCat("no route to master address '", host, "': ", problem));
  }
  return address;
}

absl::StatusOr<JobConfig> JobConfigFromEnv() {
  JobConfig config;
  bool slurm = false;
  const Source* launcher = nullptr;
  int64_t launcher_local_size = 0;
  for (const Source& source : kSources) {
    bool has_rank = false, has_size = false;
    absl::StatusOr<int64_t> rank = EnvInt(source.rank, &has_rank);
    if (!rank.ok()) return rank.status();
    absl::StatusOr<int64_t> size = EnvInt(source.size, &has_size);
    if (!size.ok()) return size.status();
    if (!has_rank && !has_size) continue;
    if (!has_size || *size < 1 || *size > 65536) {
      return absl::InvalidArgumentError(
          absl::StrCat(source.size, ": needs a number of processes >= 1 (with ",
                       source.rank, ")"));
    }
    if (!has_rank || *rank < 0 || *rank >= *size) {
      return absl::InvalidArgumentError(
          absl::StrCat(source.rank, ": needs a rank in 0..", *size - 1, " (",
                       source.size, " is ", *size, ")"));
    }
    config.rank = static_cast<int32_t>(*rank);
    config.world_size = static_cast<int32_t>(*size);
    bool has_local = false;
    absl::StatusOr<int64_t> local = EnvInt(source.local_rank, &has_local);
    if (local.ok() && has_local && *local >= 0) {
      config.local_rank = static_cast<int32_t>(*local);
    }
    int64_t local_size = 0;
    if (source.local_size != nullptr) {
      absl::StatusOr<int64_t> given = EnvInt(source.local_size, &has_local);
      if (given.ok() && has_local) local_size = *given;
    } else {
      bool has_node = false;
      absl::StatusOr<int64_t> node = EnvInt("SLURM_NODEID", &has_node);
      if (node.ok() && has_node) local_size = SlurmTasksOnNode(*node);
    }
    config.local_world_size = local_size > config.local_rank
                                  ? static_cast<int32_t>(local_size)
                                  : config.local_rank + 1;
    slurm = std::strcmp(source.rank, "SLURM_PROCID") == 0;
    launcher = &source;
    launcher_local_size = local_size;
    break;
  }
  if (const char* addr = Env("MASTER_ADDR")) {
    config.master_addr = addr;
  } else if (slurm) {
    const char* nodes = Env("SLURM_JOB_NODELIST");
    if (nodes == nullptr) nodes = Env("SLURM_NODELIST");
    if (nodes != nullptr) {
      absl::StatusOr<std::vector<std::string>> hosts = ExpandHostList(nodes);
      if (!hosts.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("SLURM_JOB_NODELIST: ", hosts.status().message()));
      }
      config.master_addr = hosts->front();
    }
  } else if (launcher != nullptr && launcher->local_size != nullptr &&
             launcher_local_size > 0 &&
             launcher_local_size < config.world_size) {
    // mpirun across hosts: a loopback master reaches nobody; say so now
    // rather than time out joining.
    config.master_missing = absl::StrCat(
        launcher->local_size, "=", launcher_local_size, " of ", launcher->size,
        "=", config.world_size,
        ": the ranks are on several hosts, but MASTER_ADDR is not set; "
        "give rank 0's host (mpirun -x MASTER_ADDR=HOST, or --master-addr)");
  }
  bool has_port = false;
  absl::StatusOr<int64_t> port = EnvInt("MASTER_PORT", &has_port);
  if (!port.ok()) return port.status();
  if (has_port) {
    if (*port < 1 || *port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("MASTER_PORT: needs a port in 1..65535, got ", *port));
    }
    config.master_port = static_cast<int32_t>(*port);
  } else if (slurm) {
    bool has_job = false;
    absl::StatusOr<int64_t> job = EnvInt("SLURM_JOB_ID", &has_job);
    if (job.ok() && has_job && *job >= 0) {
      config.master_port = static_cast<int32_t>(20000 + *job % 10000);
    }
  }
  if (const char* token = Env("ACTORFLOW_JOB_TOKEN")) config.token = token;
  if (const char* shm = Env("ACTORFLOW_NET_SHM")) {
    const absl::string_view value = shm;
    if (value != "0" && value != "1") {
      return absl::InvalidArgumentError(
          absl::StrCat("ACTORFLOW_NET_SHM: needs 0 or 1, got '", value, "'"));
    }
    config.net_shm = value == "1";
  }
  for (const char* name :
       {"ACTORFLOW_JOB_ID", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"}) {
    if (const char* id = Env(name)) {
      config.job_id = id;
      break;
    }
  }
  return config;
}

}  // namespace actorflow::internal::net
