#include "pipeline/caffe_lmdb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <lmdb.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "pipeline/image_codec.h"

namespace actorflow::internal::pipeline {

struct CaffeLmdb::Env {
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  ~Env() {
    if (env != nullptr) mdb_env_close(env);
  }
};

namespace {

absl::Status LmdbError(const std::string& path, const char* what, int rc) {
  return absl::Status(
      rc == ENOENT ? absl::StatusCode::kNotFound
                   : absl::StatusCode::kInvalidArgument,
      absl::StrCat("LMDB '", path, "': ", what, ": ", mdb_strerror(rc)));
}

// A read-only transaction, ended when it goes.
struct ReadTxn {
  MDB_txn* txn = nullptr;
  ~ReadTxn() {
    if (txn != nullptr) mdb_txn_abort(txn);
  }
};

}  // namespace

struct CaffeLmdb::Value {
  ReadTxn txn;
  MDB_val bytes{0, nullptr};
};

absl::StatusOr<std::unique_ptr<CaffeLmdb>> CaffeLmdb::Open(
    const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    const int error = errno;
    return absl::Status(
        error == ENOENT ? absl::StatusCode::kNotFound
                        : absl::StatusCode::kPermissionDenied,
        absl::StrCat("LMDB '", path, "': ", std::strerror(error)));
  }
  std::unique_ptr<CaffeLmdb> db(new CaffeLmdb());
  db->env_ = std::make_unique<Env>();
  int rc = mdb_env_create(&db->env_->env);
  if (rc != 0) return LmdbError(path, "create", rc);
  const unsigned flags = MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS |
                         (S_ISDIR(info.st_mode) ? 0 : MDB_NOSUBDIR);
  rc = mdb_env_open(db->env_->env, path.c_str(), flags, 0);
  if (rc != 0) return LmdbError(path, "open", rc);
  ReadTxn txn;
  rc = mdb_txn_begin(db->env_->env, nullptr, MDB_RDONLY, &txn.txn);
  if (rc == 0) rc = mdb_dbi_open(txn.txn, nullptr, 0, &db->env_->dbi);
  if (rc != 0) return LmdbError(path, "open the database", rc);
  MDB_cursor* cursor = nullptr;
  rc = mdb_cursor_open(txn.txn, db->env_->dbi, &cursor);
  if (rc != 0) return LmdbError(path, "open a cursor", rc);
  MDB_val key, value;
  for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
    db->keys_.emplace_back(static_cast<const char*>(key.mv_data), key.mv_size);
    db->largest_ = std::max(db->largest_, static_cast<int64_t>(value.mv_size));
  }
  mdb_cursor_close(cursor);
  if (rc != MDB_NOTFOUND) return LmdbError(path, "list the keys", rc);
  if (db->keys_.empty()) {
    return absl::NotFoundError(absl::StrCat("LMDB '", path, "' is empty"));
  }
  return db;
}

CaffeLmdb::~CaffeLmdb() = default;

absl::Status CaffeLmdb::Get(int64_t i, Value* value) const {
  const std::string& name = keys_[i];
  int rc = mdb_txn_begin(env_->env, nullptr, MDB_RDONLY, &value->txn.txn);
  MDB_val key{name.size(), const_cast<char*>(name.data())};
  if (rc == 0) rc = mdb_get(value->txn.txn, env_->dbi, &key, &value->bytes);
  if (rc != 0) {
    return absl::DataLossError(
        absl::StrCat("record '", name, "': ", mdb_strerror(rc)));
  }
  return absl::OkStatus();
}

absl::Status CaffeLmdb::Read(int64_t i,
                             actorflow::pipeline::CaffeDatum* datum) const {
  Value value;
  absl::Status ok = Get(i, &value);
  if (!ok.ok()) return ok;
  if (!datum->ParseFromArray(value.bytes.mv_data,
                             static_cast<int>(value.bytes.mv_size))) {
    return absl::DataLossError(absl::StrCat("record '", keys_[i],
                                            "': not a Caffe Datum (",
                                            value.bytes.mv_size, " bytes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<int64_t, int64_t>> CaffeLmdb::ImageSize(
    int64_t i) const {
  using google::protobuf::internal::WireFormatLite;
  Value value;
  absl::Status ok = Get(i, &value);
  if (!ok.ok()) return ok;
  const auto* bytes = static_cast<const uint8_t*>(value.bytes.mv_data);
  const int size = static_cast<int>(value.bytes.mv_size);
  google::protobuf::io::CodedInputStream in(bytes, size);
  // The fields CaffeDatum numbers 2 (height), 3 (width), 4 (data) and 7
  // (encoded); the others skipped.
  uint32_t height = 0, width = 0, encoded = 1, length = 0;
  bool has_data = false, has_encoded = false;
  const uint8_t* data = nullptr;
  bool parsed = true;
  for (uint32_t tag = in.ReadTag(); tag != 0 && parsed; tag = in.ReadTag()) {
    switch (WireFormatLite::GetTagFieldNumber(tag)) {
      case 2:
        parsed = in.ReadVarint32(&height);
        break;
      case 3:
        parsed = in.ReadVarint32(&width);
        break;
      case 4:
        parsed = in.ReadVarint32(&length) &&
                 length <= static_cast<uint32_t>(size - in.CurrentPosition());
        if (parsed) {
          data = bytes + in.CurrentPosition();
          has_data = in.Skip(static_cast<int>(length));
        }
        break;
      case 7:
        parsed = in.ReadVarint32(&encoded);
        has_encoded = true;
        break;
      default:
        parsed = WireFormatLite::SkipField(&in, tag);
    }
  }
  if (!parsed || !in.ConsumedEntireMessage() || !has_data) {
    return absl::DataLossError(absl::StrCat("record '", keys_[i],
                                            "': not a Caffe Datum with data (",
                                            size, " bytes)"));
  }
  if (has_encoded && encoded == 0) {
    return std::pair<int64_t, int64_t>{height, width};
  }
  auto header = ReadImageHeader(absl::MakeConstSpan(data, length));
  if (!header.ok()) {
    return absl::Status(
        header.status().code(),
        absl::StrCat("record '", keys_[i], "': ", header.status().message()));
  }
  return std::pair<int64_t, int64_t>{header->height, header->width};
}

bool IsEncoded(const actorflow::pipeline::CaffeDatum& datum) {
  return !datum.has_encoded() || datum.encoded();
}

}  // namespace actorflow::internal::pipeline
