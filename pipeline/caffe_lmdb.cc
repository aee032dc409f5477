#include "pipeline/caffe_lmdb.h"

#include <lmdb.h>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"

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

absl::StatusOr<std::unique_ptr<CaffeLmdb>> CaffeLmdb::Open(
    const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(
        absl::StrCat("LMDB '", path, "': no such file or directory"));
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

absl::Status CaffeLmdb::Read(int64_t i,
                             actorflow::pipeline::CaffeDatum* datum) const {
  const std::string& name = keys_[i];
  ReadTxn txn;
  int rc = mdb_txn_begin(env_->env, nullptr, MDB_RDONLY, &txn.txn);
  MDB_val key{name.size(), const_cast<char*>(name.data())}, value;
  if (rc == 0) rc = mdb_get(txn.txn, env_->dbi, &key, &value);
  if (rc != 0) {
    return absl::DataLossError(
        absl::StrCat("record '", name, "': ", mdb_strerror(rc)));
  }
  if (!datum->ParseFromArray(value.mv_data, static_cast<int>(value.mv_size))) {
    return absl::DataLossError(absl::StrCat(
        "record '", name, "': not a Caffe Datum (", value.mv_size, " bytes)"));
  }
  return absl::OkStatus();
}

bool IsEncoded(const actorflow::pipeline::CaffeDatum& datum) {
  return !datum.has_encoded() || datum.encoded();
}

}  // namespace actorflow::internal::pipeline
