// Remote tar shards at the byte level, against a real HTTP server on
// loopback (python/tests/shard_server.py) that resets and cuts answers short
// on purpose: HttpClient's ranges through the faults, its errors by name,
// the prefetch thread (and its cancel when the reader closes), and a tar
// file's members listed over HTTP as from disk, a truncated one included.
// Under TSan it covers the prefetch thread and the client it drives.
#include "pipeline/shard_files.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/http_client.h"
#include "pipeline/remote_prefetch.h"
#include "pipeline/tar_index.h"
#include "tests/cli_util.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

using testing::Runfile;

// shard_server.py serving `dir` with `faults`, stopped on destruction.
class Server {
 public:
  Server(const std::string& dir, std::vector<std::string> faults) {
    int out[2];
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      const std::string script = Runfile("python/tests/shard_server.py");
      std::vector<std::string> args = {"/usr/bin/python3", script, dir};
      args.insert(args.end(), faults.begin(), faults.end());
      std::vector<char*> argv;
      for (std::string& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    FILE* from = fdopen(out[0], "r");
    char line[64] = {};
    REQUIRE(std::fgets(line, sizeof(line), from) != nullptr);
    std::fclose(from);
    int port = 0;
    REQUIRE(std::sscanf(line, "port %d", &port) == 1);
    url_ = absl::StrCat("http://127.0.0.1:", port);
  }
  ~Server() { Stop(); }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  std::string Url(const std::string& name) const {
    return absl::StrCat(url_, "/", name);
  }

 private:
  pid_t pid_ = -1;
  std::string url_;
};

// A file of `bytes` seeded bytes under `dir`; returns its content.
std::string WriteBytes(const std::string& path, int64_t bytes, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::string data(bytes, '\0');
  for (char& c : data) c = static_cast<char>(random());
  std::ofstream(path, std::ios::binary) << data;
  return data;
}

HttpRetry QuickRetry() {
  HttpRetry retry;
  retry.first_backoff = absl::Milliseconds(1);
  retry.max_backoff = absl::Milliseconds(10);
  return retry;
}

TEST_CASE("ranges read through resets and short answers, each byte once",
          "[http]") {
  const std::string dir = testing::TestTempDir("http_ranges");
  const std::string data = WriteBytes(dir + "/blob.bin", 3 << 20, 7);
  Server server(dir, {"--reset-every", "3", "--short-every", "4"});
  HttpClient http(QuickRetry());
  auto head = http.Head(server.Url("blob.bin"));
  REQUIRE(head.ok());
  CHECK(head->size == static_cast<int64_t>(data.size()));
  CHECK(head->modified > 0);
  const uint64_t seed = testing::TestSeed("http ranges");
  std::mt19937_64 random(seed);
  for (int i = 0; i < 30; ++i) {
    const int64_t offset = random() % data.size();
    const int64_t length = 1 + random() % (1 << 20);
    std::string got;
    REQUIRE(http.Read(server.Url("blob.bin"), offset, length, &got).ok());
    CHECK(got == data.substr(offset, length));  // clipped at the end
  }
  CHECK(http.retries() > 0);
  // Past the end: nothing, no error.
  std::string none;
  REQUIRE(http.Read(server.Url("blob.bin"), data.size() + 5, 10, &none).ok());
  CHECK(none.empty());
}

TEST_CASE("HTTP errors name the URL; a gone server is retried, then named",
          "[http]") {
  const std::string dir = testing::TestTempDir("http_errors");
  WriteBytes(dir + "/x.bin", 100, 1);
  Server server(dir, {});
  HttpClient http(QuickRetry());
  auto missing = http.Head(server.Url("nope.tar"));
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(std::string(missing.status().message()) ==
        "'" + server.Url("nope.tar") + "': HTTP 404");
  const std::string url = server.Url("x.bin");
  server.Stop();
  std::string got;
  absl::Status gone = http.Read(url, 0, 10, &got);
  CHECK(absl::IsUnavailable(gone));
  CHECK_THAT(std::string(gone.message()),
             Catch::StartsWith("'" + url + "' bytes 0 to 10: ") &&
                 Catch::EndsWith("(6 attempts)"));
  CHECK(http.retries() == 5);
}

TEST_CASE("the prefetch thread fetches in order, and closes at once",
          "[http]") {
  const std::string dir = testing::TestTempDir("http_prefetch");
  const std::string data = WriteBytes(dir + "/blob.bin", 2 << 20, 3);
  Server server(dir, {"--reset-every", "5"});
  std::vector<std::shared_ptr<RemotePrefetcher::Run>> runs;
  {
    RemotePrefetcher prefetcher(QuickRetry());
    for (int64_t at = 0; at < static_cast<int64_t>(data.size()); at += 100000) {
      runs.push_back(prefetcher.Fetch(server.Url("blob.bin"), at, 150000));
    }
    for (const auto& run : runs) {
      REQUIRE(RemotePrefetcher::Wait(run.get()).ok());
      CHECK(run->bytes == data.substr(run->offset, run->length));
    }
    // Queued and never waited for: the destructor cancels and joins.
    for (int i = 0; i < 50; ++i) {
      runs.push_back(prefetcher.Fetch(server.Url("blob.bin"), 0, 1 << 20));
    }
  }
  // Every run is done, fetched or cancelled; none is left pending.
  for (const auto& run : runs) {
    absl::Status status = RemotePrefetcher::Wait(run.get());
    CHECK((status.ok() || absl::IsCancelled(status)));
  }
}

TEST_CASE("a tar file lists the same members over HTTP as from disk",
          "[http]") {
  const std::string dir = testing::TestTempDir("http_tar");
  // A tar of three members, the last cut off by a truncation.
  const std::string tar = dir + "/s.tar";
  const std::string cmd = absl::StrCat(
      "cd '", dir, "' && head -c 3000 /dev/urandom > a.jpg && echo 7 > a.cls ",
      "&& head -c 5000 /dev/urandom > b.jpg && tar --format=ustar -cf s.tar ",
      "a.jpg a.cls b.jpg && truncate -s 3000 s.tar && rm a.jpg a.cls b.jpg");
  REQUIRE(std::system(cmd.c_str()) == 0);
  setenv("ACTORFLOW_CACHE_DIR", (dir + "/cache").c_str(), 1);
  Server server(dir, {"--short-every", "2"});
  ShardFiles local, remote;
  REQUIRE(local.Add(tar).ok());
  REQUIRE(remote.Add(server.Url("s.tar")).ok());
  auto a = ListTar(&local, 0);
  auto b = ListTar(&remote, 0);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->size() == 1);  // a.jpg, cut off at 3000 - 512 bytes
  CHECK((*a)[0].name == "a.jpg");
  CHECK((*a)[0].size == 3000);
  CHECK((*a)[0].available == 3000 - 512);
  REQUIRE(b->size() == a->size());
  CHECK((*b)[0].offset == (*a)[0].offset);
  CHECK((*b)[0].available == (*a)[0].available);
  // Listed again from the cache: the same.
  auto c = ListTar(&remote, 0);
  REQUIRE(c.ok());
  CHECK((*c)[0].available == (*a)[0].available);
}

}  // namespace
}  // namespace actorflow::internal::pipeline
