#include "actorflow/checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "actor/blob_desc_proto.h"
#include "plan/plan_signature.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::DiffSignatures;
using ::actorflow::internal::SignatureFingerprint;
using ::actorflow::internal::ToDataType;
using ::actorflow::internal::ToProto;

const char* const kCheckpointSteps[] = {
    "tmp_dir",    "data",    "data_synced", "manifest", "manifest_synced",
    "dir_synced", "renamed", "root_synced", "pruned",
};
const int kNumCheckpointSteps =
    sizeof(kCheckpointSteps) / sizeof(kCheckpointSteps[0]);

namespace {

namespace fs = std::filesystem;

constexpr char kManifestName[] = "MANIFEST";
constexpr char kStateName[] = "state.bin";
constexpr char kMagic[] = "ACTORFLOW-CHECKPOINT\n";  // without the NUL
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr size_t kHeaderSize = kMagicSize + 8 + 4;  // magic, length, CRC
constexpr int kFormatVersion = 1;
constexpr char kDirPrefix[] = "ckpt-";
constexpr char kTmpPrefix[] = ".tmp-ckpt-";

// ACTORFLOW_CHECKPOINT_CRASH_AT: dies (SIGKILL, as a crash would) right
// after the step named there, on its N-th occurrence in this process.
void Step(const char* step) {
  static const char* spec = std::getenv("ACTORFLOW_CHECKPOINT_CRASH_AT");
  if (spec == nullptr || *spec == '\0') return;
  static std::atomic<int> seen{0};
  std::pair<std::string, std::string> parts =
      absl::StrSplit(spec, absl::MaxSplits(':', 1));
  if (parts.first != step) return;
  int nth = 1;
  if (!parts.second.empty() && !absl::SimpleAtoi(parts.second, &nth)) nth = 1;
  if (seen.fetch_add(1) + 1 != nth) return;
  std::fprintf(stderr, "actorflow: ACTORFLOW_CHECKPOINT_CRASH_AT=%s: killed\n",
               spec);
  std::fflush(stderr);
  kill(getpid(), SIGKILL);
}

absl::Status Errno(const std::string& what, const std::string& path) {
  const int error = errno;
  return absl::Status(error == ENOSPC || error == EDQUOT
                          ? absl::StatusCode::kResourceExhausted
                          : absl::StatusCode::kInternal,
                      absl::StrCat("checkpoint: cannot ", what, " '", path,
                                   "': ", std::strerror(error)));
}

double ThreadCpuMs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 +
         static_cast<double>(now.tv_nsec) / 1e6;
}

uint32_t Crc32(const char* data, size_t bytes) {
  return static_cast<uint32_t>(crc32_z(
      crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data), bytes));
}

absl::Status SyncPath(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Errno("open", path);
  if (fsync(fd) != 0) {
    absl::Status status = Errno("fsync", path);
    close(fd);
    return status;
  }
  close(fd);
  return absl::OkStatus();
}

// Writes `parts` one after another into a new file, then syncs it.
absl::Status WriteFile(const std::string& path,
                       const std::vector<absl::string_view>& parts) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create", path);
  for (absl::string_view part : parts) {
    while (!part.empty()) {
      ssize_t n = write(fd, part.data(), part.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        absl::Status status = Errno("write", path);
        close(fd);
        return status;
      }
      part.remove_prefix(static_cast<size_t>(n));
    }
  }
  const bool manifest = absl::EndsWith(path, kManifestName);
  Step(manifest ? "manifest" : "data");
  if (fsync(fd) != 0) {
    absl::Status status = Errno("fsync", path);
    close(fd);
    return status;
  }
  if (close(fd) != 0) return Errno("close", path);
  Step(manifest ? "manifest_synced" : "data_synced");
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::DataLossError(
          absl::StrCat("checkpoint: '", path, "' is missing"));
    }
    return Errno("open", path);
  }
  std::string bytes;
  char buffer[1 << 16];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status status = Errno("read", path);
      close(fd);
      return status;
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return bytes;
}

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i)
    out->push_back(static_cast<char>(value >> (8 * i)));
}

uint64_t GetLittleEndian(const char* data, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(data[i]))
             << (8 * i);
  }
  return value;
}

// The entries of one state, laid end to end in `file` from *offset on:
// their manifest records, and the bytes to write.
void LayOutEntries(const KernelState& state, const std::string& file,
                   int64_t* offset,
                   google::protobuf::RepeatedPtrField<CheckpointEntry>* out,
                   std::vector<absl::string_view>* parts) {
  for (const StateEntry& entry : state.entries()) {
    CheckpointEntry* record = out->Add();
    record->set_name(entry.name);
    record->set_data_type(ToProto(entry.data_type));
    for (int64_t d : entry.shape) record->add_shape(d);
    record->set_file(file);
    record->set_offset(*offset);
    record->set_bytes(static_cast<int64_t>(entry.bytes.size()));
    record->set_crc32(Crc32(entry.bytes.data(), entry.bytes.size()));
    *offset += static_cast<int64_t>(entry.bytes.size());
    parts->push_back(entry.bytes);
  }
}

bool ParsePiece(absl::string_view name, absl::string_view prefix,
                int64_t* piece) {
  if (!absl::ConsumePrefix(&name, prefix)) return false;
  if (name.empty()) return false;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(name, piece);
}

// The files' contents, read once each, verified entry by entry.
absl::Status ReadEntries(
    const std::string& path, const std::string& owner,
    const google::protobuf::RepeatedPtrField<CheckpointEntry>& records,
    std::map<std::string, std::string>* files,
    std::map<std::string, int64_t>* expected_sizes, KernelState* state) {
  for (const CheckpointEntry& record : records) {
    if (record.file().empty() || record.file().find('/') != std::string::npos ||
        record.file() == kManifestName) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint '", path, "': MANIFEST names a bad file '", record.file(),
          "' for state '", record.name(), "' of ", owner));
    }
    const std::string file = absl::StrCat(path, "/", record.file());
    auto found = files->find(record.file());
    if (found == files->end()) {
      auto bytes = ReadFile(file);
      if (!bytes.ok()) {
        return absl::Status(bytes.status().code(),
                            absl::StrCat(bytes.status().message(), " (state '",
                                         record.name(), "' of ", owner, ")"));
      }
      found = files->emplace(record.file(), std::move(*bytes)).first;
    }
    int64_t& end = (*expected_sizes)[record.file()];
    end = std::max(end, record.offset() + record.bytes());
    const std::string& bytes = found->second;
    if (record.offset() < 0 || record.bytes() < 0 ||
        record.offset() + record.bytes() > static_cast<int64_t>(bytes.size())) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint: '", file, "' is truncated: ", bytes.size(),
          " bytes, state '", record.name(), "' of ", owner, " needs bytes ",
          record.offset(), "..", record.offset() + record.bytes()));
    }
    const char* data = bytes.data() + record.offset();
    if (Crc32(data, static_cast<size_t>(record.bytes())) != record.crc32()) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint: '", file, "': state '", record.name(), "' of ", owner,
          " fails its checksum (the file is corrupt)"));
    }
    StateEntry entry;
    entry.name = record.name();
    entry.data_type = ToDataType(record.data_type());
    entry.shape.assign(record.shape().begin(), record.shape().end());
    entry.bytes.assign(data, static_cast<size_t>(record.bytes()));
    absl::Status added = state->AddEntry(std::move(entry));
    if (!added.ok()) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint: '", file, "': ", added.message(), " of ", owner));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int64_t CheckpointData::byte_size() const {
  int64_t bytes = user.byte_size();
  for (const TaskState& task : tasks) bytes += task.state.byte_size();
  return bytes;
}

std::string CheckpointPath(const std::string& root, int64_t piece) {
  return absl::StrFormat("%s/%s%012d", root, kDirPrefix, piece);
}

absl::StatusOr<WrittenCheckpoint> WriteCheckpoint(
    const std::string& root, const CheckpointData& data,
    const CheckpointWriteOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = ThreadCpuMs();
  std::error_code error;
  fs::create_directories(root, error);
  if (error) {
    return absl::InternalError(absl::StrCat("checkpoint: cannot create '", root,
                                            "': ", error.message()));
  }
  static std::atomic<int64_t> serial{0};
  const std::string tmp =
      absl::StrFormat("%s/%s%012d-%d-%d", root, kTmpPrefix, data.piece,
                      static_cast<int>(getpid()), serial.fetch_add(1));
  if (mkdir(tmp.c_str(), 0755) != 0) return Errno("create", tmp);
  Step("tmp_dir");
  auto fail = [&](absl::Status status) {
    fs::remove_all(tmp, error);
    return status;
  };

  CheckpointManifest manifest;
  manifest.set_format_version(kFormatVersion);
  manifest.set_piece(data.piece);
  for (const TaskSignature& task : data.plan) *manifest.add_plan() = task;
  manifest.set_plan_fingerprint(SignatureFingerprint(data.plan));
  manifest.set_rank(data.rank);
  manifest.set_world_size(data.world_size);
  manifest.set_created(
      absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone()));
  // Every array in one file: one write and one sync for the lot (a sync
  // per task cost the training on two cores far more than the bytes).
  int64_t bytes = 0;
  std::vector<absl::string_view> parts;
  for (const TaskState& task : data.tasks) {
    TaskCheckpoint* record = manifest.add_task();
    record->set_task(task.task);
    record->set_op_type(task.op_type);
    LayOutEntries(task.state, kStateName, &bytes, record->mutable_entry(),
                  &parts);
  }
  LayOutEntries(data.user, kStateName, &bytes, manifest.mutable_user(), &parts);
  if (!parts.empty()) {
    absl::Status written = WriteFile(absl::StrCat(tmp, "/", kStateName), parts);
    if (!written.ok()) return fail(written);
  }
  std::string payload;
  if (!manifest.SerializeToString(&payload)) {
    return fail(absl::InternalError("checkpoint: cannot serialize MANIFEST"));
  }
  std::string header(kMagic, kMagicSize);
  PutLittleEndian(payload.size(), 8, &header);
  PutLittleEndian(Crc32(payload.data(), payload.size()), 4, &header);
  absl::Status written =
      WriteFile(absl::StrCat(tmp, "/", kManifestName), {header, payload});
  if (!written.ok()) return fail(written);
  bytes += static_cast<int64_t>(header.size() + payload.size());
  absl::Status synced = SyncPath(tmp, O_RDONLY | O_DIRECTORY);
  if (!synced.ok()) return fail(synced);
  Step("dir_synced");

  const std::string path = CheckpointPath(root, data.piece);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    if (errno != EEXIST && errno != ENOTEMPTY) {
      return fail(Errno(absl::StrCat("rename '", tmp, "' to"), path));
    }
    // The same piece again (a restored run's first cut): swap the new
    // directory in with one atomic step, then drop the old one.
    if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(),
                  RENAME_EXCHANGE) != 0) {
      return fail(Errno(absl::StrCat("exchange '", tmp, "' with"), path));
    }
    fs::remove_all(tmp, error);
  }
  Step("renamed");
  synced = SyncPath(root, O_RDONLY | O_DIRECTORY);
  if (!synced.ok()) return synced;
  Step("root_synced");
  absl::Status pruned = PruneCheckpoints(root, options.keep_last);
  if (!pruned.ok()) return pruned;
  if (options.keep_last > 0) Step("pruned");
  WrittenCheckpoint result;
  result.path = path;
  result.piece = data.piece;
  result.bytes = bytes;
  result.write_ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  result.cpu_ms = ThreadCpuMs() - cpu_start;
  return result;
}

absl::StatusOr<CheckpointData> ReadCheckpoint(const std::string& path) {
  const std::string manifest_path = absl::StrCat(path, "/", kManifestName);
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return absl::NotFoundError(
        absl::StrCat("checkpoint '", path, "' does not exist"));
  }
  auto bytes = ReadFile(manifest_path);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() < kHeaderSize ||
      bytes->compare(0, kMagicSize, kMagic, kMagicSize) != 0) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint: '", manifest_path, "' is not a checkpoint manifest",
        bytes->size() < kHeaderSize ? " (it is truncated)" : ""));
  }
  const uint64_t length = GetLittleEndian(bytes->data() + kMagicSize, 8);
  const uint32_t crc =
      static_cast<uint32_t>(GetLittleEndian(bytes->data() + kMagicSize + 8, 4));
  if (length != bytes->size() - kHeaderSize) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint: '", manifest_path, "' is ",
        length > bytes->size() - kHeaderSize ? "truncated" : "corrupt", ": ",
        bytes->size() - kHeaderSize, " bytes of manifest, its header says ",
        length));
  }
  const char* payload = bytes->data() + kHeaderSize;
  CheckpointManifest manifest;
  if (Crc32(payload, length) != crc ||
      !manifest.ParseFromArray(payload, static_cast<int>(length))) {
    return absl::DataLossError(absl::StrCat("checkpoint: '", manifest_path,
                                            "' fails its checksum (the file "
                                            "is corrupt)"));
  }
  if (manifest.format_version() != kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint: '", manifest_path, "' has format version ",
                     manifest.format_version(), "; this build reads version ",
                     kFormatVersion));
  }
  CheckpointData data;
  data.piece = manifest.piece();
  data.plan.assign(manifest.plan().begin(), manifest.plan().end());
  data.rank = manifest.rank();
  data.world_size = manifest.world_size();
  if (SignatureFingerprint(manifest.plan()) != manifest.plan_fingerprint()) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint: '", manifest_path,
        "': its plan does not match its fingerprint (the file is corrupt)"));
  }
  std::map<std::string, std::string> files;
  std::map<std::string, int64_t> sizes;
  for (const TaskCheckpoint& record : manifest.task()) {
    TaskState& task = data.tasks.emplace_back();
    task.task = record.task();
    task.op_type = record.op_type();
    absl::Status read =
        ReadEntries(path, absl::StrCat("task '", record.task(), "'"),
                    record.entry(), &files, &sizes, &task.state);
    if (!read.ok()) return read;
  }
  absl::Status read = ReadEntries(path, "the program's entries",
                                  manifest.user(), &files, &sizes, &data.user);
  if (!read.ok()) return read;
  for (const auto& [file, content] : files) {
    if (static_cast<int64_t>(content.size()) != sizes[file]) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint: '", path, "/", file, "' has ", content.size(),
          " bytes, its manifest says ", sizes[file], " (the file is corrupt)"));
    }
  }
  return data;
}

absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> ListCheckpoints(
    const std::string& root) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  if (!fs::exists(root, error)) return found;
  fs::directory_iterator it(root, error);
  if (error) {
    return absl::InternalError(absl::StrCat("checkpoint: cannot list '", root,
                                            "': ", error.message()));
  }
  for (const fs::directory_entry& entry : it) {
    int64_t piece = 0;
    const std::string name = entry.path().filename().string();
    if (!ParsePiece(name, kDirPrefix, &piece)) continue;
    if (!entry.is_directory(error)) continue;
    if (!fs::exists(entry.path() / kManifestName, error)) continue;
    found.emplace_back(piece, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

absl::StatusOr<std::string> ResolveCheckpoint(const std::string& dir) {
  std::error_code error;
  if (fs::exists(fs::path(dir) / kManifestName, error)) return dir;
  if (!fs::exists(dir, error)) {
    return absl::NotFoundError(
        absl::StrCat("no checkpoint in '", dir, "': it does not exist"));
  }
  auto list = ListCheckpoints(dir);
  if (!list.ok()) return list.status();
  if (list->empty()) {
    return absl::NotFoundError(
        absl::StrCat("no checkpoint in '", dir, "' (no ", kDirPrefix,
                     "<piece> directory holding a ", kManifestName, ")"));
  }
  return list->back().second;
}

namespace {

// Temporary directories whose writer died (a crash mid-write).
void RemoveDeadTemporaries(const std::string& root) {
  std::error_code error;
  fs::directory_iterator it(root, error);
  if (error) return;
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kTmpPrefix, 0) != 0) continue;
    std::vector<std::string> parts = absl::StrSplit(name, '-');
    int pid = 0;
    if (parts.size() < 2 || !absl::SimpleAtoi(parts[parts.size() - 2], &pid)) {
      continue;
    }
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    fs::remove_all(entry.path(), error);
  }
}

}  // namespace

absl::Status PruneCheckpoints(const std::string& root, int keep) {
  RemoveDeadTemporaries(root);
  if (keep < 1) return absl::OkStatus();
  auto list = ListCheckpoints(root);
  if (!list.ok()) return list.status();
  std::error_code error;
  for (size_t i = 0; i + keep < list->size(); ++i) {
    fs::remove_all((*list)[i].second, error);
    if (error) {
      return absl::InternalError(absl::StrCat("checkpoint: cannot remove '",
                                              (*list)[i].second,
                                              "': ", error.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSamePlan(const std::string& path, const CheckpointData& data,
                           const std::vector<TaskSignature>& plan) {
  if (SignatureFingerprint(data.plan) == SignatureFingerprint(plan)) {
    return absl::OkStatus();
  }
  google::protobuf::RepeatedPtrField<TaskSignature> saved(data.plan.begin(),
                                                          data.plan.end());
  std::string diff = DiffSignatures(saved, plan);
  if (diff.empty()) diff = "the plans' fingerprints differ";
  return absl::FailedPreconditionError(
      absl::StrCat("checkpoint '", path, "' is of another plan: ", diff));
}

absl::Status CheckSameStatefulTasks(const std::string& path,
                                    const CheckpointData& data,
                                    const std::vector<TaskSignature>& plan,
                                    const std::vector<std::string>& stateful) {
  auto refuse = [&](const std::string& why) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint '", path, "' is of another plan: ", why));
  };
  absl::flat_hash_map<std::string, const TaskSignature*> saved, here;
  for (const TaskSignature& task : data.plan) saved[task.name()] = &task;
  for (const TaskSignature& task : plan) here[task.name()] = &task;
  for (const std::string& name : stateful) {
    auto was = saved.find(name);
    if (was == saved.end()) {
      return refuse(absl::StrCat("task '", name,
                                 "' keeps state but is not in the checkpoint"));
    }
    const TaskSignature& a = *was->second;
    const TaskSignature& b = *here.at(name);
    if (a.op_type() != b.op_type()) {
      return refuse(absl::StrCat("task '", name, "' is ", a.op_type(),
                                 " in the checkpoint, ", b.op_type(), " here"));
    }
  }
  const absl::flat_hash_set<std::string> keeps(stateful.begin(),
                                               stateful.end());
  for (const TaskState& task : data.tasks) {
    if (!keeps.contains(task.task)) {
      return refuse(absl::StrCat("the checkpoint holds state for task '",
                                 task.task, "', which keeps none here"));
    }
  }
  return absl::OkStatus();
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
