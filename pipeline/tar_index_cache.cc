#include "pipeline/tar_index_cache.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace actorflow::internal::pipeline {
namespace {

constexpr char kMagic[] = "actorflow-tar-index 1";

std::string CacheDir() {
  if (const char* dir = std::getenv("ACTORFLOW_CACHE_DIR"); dir && *dir) {
    return absl::StrCat(dir, "/tar-index");
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return absl::StrCat(xdg, "/actorflow/tar-index");
  }
  const char* home = std::getenv("HOME");
  return absl::StrCat(home && *home ? home : "/tmp",
                      "/.cache/actorflow/tar-index");
}

// One file per URL: its CRC-32 and length name it (the URL inside decides).
std::string EntryPath(const std::string& url) {
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(url.data()),
                          static_cast<uInt>(url.size()));
  return absl::StrFormat("%s/%08x-%d.idx", CacheDir(), crc, url.size());
}

std::string Header(const std::string& url, int64_t size, int64_t modified) {
  return absl::StrCat(kMagic, "\n", url, "\n", size, " ", modified, "\n");
}

}  // namespace

std::optional<std::vector<TarMember>> LoadTarIndex(const std::string& url,
                                                   int64_t size,
                                                   int64_t modified) {
  if (modified < 0) return std::nullopt;
  std::ifstream in(EntryPath(url));
  if (!in) return std::nullopt;
  const std::string header = Header(url, size, modified);
  std::string got(header.size(), '\0');
  if (!in.read(got.data(), got.size()) || got != header) return std::nullopt;
  // "offset size available name" per member, the name to the line's end.
  std::vector<TarMember> members;
  for (std::string line; std::getline(in, line);) {
    if (line == "end") return members;
    TarMember m;
    size_t at = 0;
    for (int64_t* field : {&m.offset, &m.size, &m.available}) {
      const size_t space = line.find(' ', at);
      if (space == std::string::npos ||
          !absl::SimpleAtoi(line.substr(at, space - at), field)) {
        return std::nullopt;
      }
      at = space + 1;
    }
    m.name = line.substr(at);
    members.push_back(std::move(m));
  }
  return std::nullopt;  // no "end": cut short
}

void SaveTarIndex(const std::string& url, int64_t size, int64_t modified,
                  const std::vector<TarMember>& members) {
  if (modified < 0) return;
  for (const TarMember& m : members) {
    if (m.name.find('\n') != std::string::npos) return;  // not a line
  }
  std::error_code error;
  std::filesystem::create_directories(CacheDir(), error);
  if (error) return;
  const std::string path = EntryPath(url);
  const std::string temp = absl::StrCat(path, ".", getpid(), ".tmp");
  {
    std::ofstream out(temp, std::ios::trunc);
    out << Header(url, size, modified);
    for (const TarMember& m : members) {
      out << m.offset << ' ' << m.size << ' ' << m.available << ' ' << m.name
          << '\n';
    }
    out << "end\n";
    if (!out.flush()) {
      std::remove(temp.c_str());
      return;
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) std::remove(temp.c_str());
}

}  // namespace actorflow::internal::pipeline
