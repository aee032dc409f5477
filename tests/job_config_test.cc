// Where a rank stands in a job, from each launcher's environment variables
// (torchrun, Open MPI, MPICH, Slurm), Slurm host lists, the address a rank
// advertises, and job tokens.
#include "net/job_config.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "net/job_token.h"

namespace actorflow::internal::net {
namespace {

// Every variable JobConfigFromEnv reads, cleared, then `vars` set; the
// old environment comes back at the end of the scope.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    for (const char* name : {"RANK",
                             "WORLD_SIZE",
                             "LOCAL_RANK",
                             "LOCAL_WORLD_SIZE",
                             "OMPI_COMM_WORLD_RANK",
                             "OMPI_COMM_WORLD_SIZE",
                             "OMPI_COMM_WORLD_LOCAL_RANK",
                             "OMPI_COMM_WORLD_LOCAL_SIZE",
                             "PMI_RANK",
                             "PMI_SIZE",
                             "MPI_LOCALRANKID",
                             "MPI_LOCALNRANKS",
                             "SLURM_PROCID",
                             "SLURM_NTASKS",
                             "SLURM_LOCALID",
                             "SLURM_NODEID",
                             "SLURM_TASKS_PER_NODE",
                             "SLURM_STEP_TASKS_PER_NODE",
                             "SLURM_JOB_NODELIST",
                             "SLURM_NODELIST",
                             "SLURM_JOB_ID",
                             "MASTER_ADDR",
                             "MASTER_PORT",
                             "ACTORFLOW_JOB_TOKEN",
                             "ACTORFLOW_JOB_ID",
                             "ACTORFLOW_NET_SHM",
                             "TORCHELASTIC_RUN_ID"}) {
      const char* old = std::getenv(name);
      if (old != nullptr) saved_[name] = old;
      unsetenv(name);
      names_.push_back(name);
    }
    for (const auto& [name, value] : vars)
      setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const std::string& name : names_) unsetenv(name.c_str());
    for (const auto& [name, value] : saved_) {
      setenv(name.c_str(), value.c_str(), 1);
    }
  }

 private:
  std::vector<std::string> names_;
  std::map<std::string, std::string> saved_;
};

TEST_CASE("ACTORFLOW_NET_SHM turns shared memory between ranks on or off",
          "[net]") {
  using Vars = std::map<std::string, std::string>;
  {
    ScopedEnv env(Vars{});
    CHECK(JobConfigFromEnv()->net_shm);
  }
  {
    ScopedEnv env(Vars{{"ACTORFLOW_NET_SHM", "0"}});
    CHECK(!JobConfigFromEnv()->net_shm);
  }
  {
    ScopedEnv env(Vars{{"ACTORFLOW_NET_SHM", "1"}});
    CHECK(JobConfigFromEnv()->net_shm);
  }
  ScopedEnv env(Vars{{"ACTORFLOW_NET_SHM", "yes"}});
  absl::StatusOr<JobConfig> config = JobConfigFromEnv();
  REQUIRE(!config.ok());
  CHECK(config.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(config.status().message() ==
        "ACTORFLOW_NET_SHM: needs 0 or 1, got 'yes'");
}

TEST_CASE("Slurm host lists expand as Slurm expands them", "[net]") {
  using List = std::vector<std::string>;
  CHECK(*ExpandHostList("node7") == List{"node7"});
  CHECK(*ExpandHostList("node[1-3,7]") ==
        List{"node1", "node2", "node3", "node7"});
  CHECK(*ExpandHostList("gpu[08-10],login") ==
        List{"gpu08", "gpu09", "gpu10", "login"});
  CHECK(*ExpandHostList("a[1-2]b[0-1]") ==
        List{"a1b0", "a1b1", "a2b0", "a2b1"});
  CHECK(*ExpandHostList("n[3],m[1-2]") == List{"n3", "m1", "m2"});
  for (const char* bad :
       {"node[1-3", "node[3-1]", "node[x]", "", "a]b", "n[[1]]"}) {
    INFO(bad);
    absl::StatusOr<List> expanded = ExpandHostList(bad);
    REQUIRE_FALSE(expanded.ok());
    CHECK_THAT(std::string(expanded.status().message()),
               Catch::Contains(std::string("host list '") + bad + "'"));
  }
}

TEST_CASE("each launcher's variables give rank, size and master", "[net]") {
  SECTION("nothing: one process on 127.0.0.1:29500") {
    ScopedEnv env({});
    JobConfig config = *JobConfigFromEnv();
    CHECK(config.rank == 0);
    CHECK(config.world_size == 1);
    CHECK(config.master_addr == "127.0.0.1");
    CHECK(config.master_port == 29500);
    CHECK(config.token.empty());
  }
  SECTION("torchrun") {
    ScopedEnv env({{"RANK", "5"},
                   {"WORLD_SIZE", "8"},
                   {"LOCAL_RANK", "1"},
                   {"LOCAL_WORLD_SIZE", "4"},
                   {"MASTER_ADDR", "10.0.0.1"},
                   {"MASTER_PORT", "1234"},
                   {"TORCHELASTIC_RUN_ID", "r7"}});
    JobConfig config = *JobConfigFromEnv();
    CHECK(config.rank == 5);
    CHECK(config.world_size == 8);
    CHECK(config.local_rank == 1);
    CHECK(config.local_world_size == 4);
    CHECK(config.master_addr == "10.0.0.1");
    CHECK(config.master_port == 1234);
    CHECK(config.job_id == "r7");
  }
  SECTION("Open MPI, under Slurm too: Open MPI's variables win") {
    ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "2"},
                   {"OMPI_COMM_WORLD_SIZE", "3"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
                   {"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "1"},
                   {"MASTER_ADDR", "h0"}});
    JobConfig config = *JobConfigFromEnv();
    CHECK(config.rank == 2);
    CHECK(config.world_size == 3);
    CHECK(config.local_world_size == 1);
    CHECK(config.master_addr == "h0");
  }
  SECTION("MPICH (Hydra's PMI)") {
    ScopedEnv env({{"PMI_RANK", "3"},
                   {"PMI_SIZE", "4"},
                   {"MPI_LOCALRANKID", "1"},
                   {"MPI_LOCALNRANKS", "2"}});
    JobConfig config = *JobConfigFromEnv();
    CHECK(config.rank == 3);
    CHECK(config.world_size == 4);
    CHECK(config.local_rank == 1);
    CHECK(config.local_world_size == 2);
    // Ranks on two hosts and no MASTER_ADDR: loopback would reach nobody.
    CHECK(config.master_missing ==
          "MPI_LOCALNRANKS=2 of PMI_SIZE=4: the ranks are on several hosts, "
          "but MASTER_ADDR is not set; give rank 0's host (mpirun -x "
          "MASTER_ADDR=HOST, or --master-addr)");
  }
  SECTION("every rank on one host needs no MASTER_ADDR") {
    ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "1"},
                   {"OMPI_COMM_WORLD_SIZE", "2"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    JobConfig config = *JobConfigFromEnv();
    CHECK(config.master_missing.empty());
    CHECK(config.master_addr == "127.0.0.1");
  }
  SECTION("Slurm alone: the master is the node list's first host") {
    ScopedEnv env({{"SLURM_PROCID", "4"},
                   {"SLURM_NTASKS", "6"},
                   {"SLURM_LOCALID", "1"},
                   {"SLURM_NODEID", "2"},
                   {"SLURM_TASKS_PER_NODE", "1,2(x2)"},
                   {"SLURM_JOB_NODELIST", "cn[07-09]"},
                   {"SLURM_JOB_ID", "123456"},
                   {"ACTORFLOW_JOB_TOKEN", "s3cret"}});
    JobConfig config = *JobConfigFromEnv();
    CHECK(config.rank == 4);
    CHECK(config.world_size == 6);
    CHECK(config.local_rank == 1);
    CHECK(config.local_world_size == 2);
    CHECK(config.master_addr == "cn07");
    CHECK(config.master_port == 20000 + 123456 % 10000);
    CHECK(config.job_id == "123456");
    CHECK(config.token == "s3cret");
  }
  SECTION("Slurm with MASTER_ADDR and MASTER_PORT: those win") {
    ScopedEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "2"},
                   {"SLURM_NODELIST", "a,b"},
                   {"SLURM_JOB_ID", "9"},
                   {"MASTER_ADDR", "b"},
                   {"MASTER_PORT", "4000"},
                   {"ACTORFLOW_JOB_ID", "mine"}});
    JobConfig config = *JobConfigFromEnv();
    CHECK(config.master_addr == "b");
    CHECK(config.master_port == 4000);
    CHECK(config.job_id == "mine");
  }
}

TEST_CASE(
    "a launcher's variables half set or out of range are errors naming "
    "them",
    "[net]") {
  struct Case {
    std::map<std::string, std::string> vars;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{{"RANK", "1"}}, "WORLD_SIZE: needs a number of processes"},
           {{{"PMI_RANK", "4"}, {"PMI_SIZE", "4"}},
            "PMI_RANK: needs a rank in 0..3"},
           {{{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}},
            "SLURM_PROCID: needs a whole number, got 'x'"},
           {{{"SLURM_PROCID", "0"},
             {"SLURM_NTASKS", "2"},
             {"SLURM_JOB_NODELIST", "n[1-"}},
            "SLURM_JOB_NODELIST: host list 'n[1-'"},
           {{{"MASTER_PORT", "70000"}},
            "MASTER_PORT: needs a port in 1..65535"},
       }) {
    ScopedEnv env(c.vars);
    absl::StatusOr<JobConfig> config = JobConfigFromEnv();
    INFO(c.says);
    REQUIRE_FALSE(config.ok());
    CHECK_THAT(std::string(config.status().message()), Catch::Contains(c.says));
  }
}

TEST_CASE("a rank advertises the address its route to the master leaves from",
          "[net]") {
  CHECK(*RouteAddressTo("127.0.0.1") == "127.0.0.1");
  CHECK(*RouteAddressTo("localhost") != "");
  absl::StatusOr<std::string> none = RouteAddressTo("no-such-host.invalid");
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(std::string(none.status().message()),
             Catch::Contains("no-such-host.invalid"));
  CHECK(IsLoopback("127.0.1.1"));
  CHECK_FALSE(IsLoopback("10.1.2.3"));
  CHECK(ResolvesOnlyToLoopback("localhost"));
  CHECK_FALSE(ResolvesOnlyToLoopback("10.1.2.3"));
}

TEST_CASE("job tokens are fresh random secrets", "[net]") {
  const std::string a = *NewJobToken(), b = *NewJobToken();
  CHECK(a.size() == 32);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a != b);
}

}  // namespace
}  // namespace actorflow::internal::net
