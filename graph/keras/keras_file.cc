#include "graph/keras/keras_file.h"

#include <zip.h>

#include <memory>

#include "core/env.h"

namespace troupe::keras {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

using ArchivePtr = std::unique_ptr<zip_t, decltype(&zip_discard)>;

Result<ArchivePtr> OpenKerasArchive(const std::string& path) {
  int error = 0;
  ArchivePtr archive(zip_open(path.c_str(), ZIP_RDONLY, &error), zip_discard);
  if (archive == nullptr) {
    zip_error_t z;
    zip_error_init_with_code(&z, error);
    std::string why = zip_error_strerror(&z);
    zip_error_fini(&z);
    return DataLossError(path + " is not a readable .keras archive: " + why +
                         " (save it with model.save('m.keras'))");
  }
  return archive;
}

// The member's bytes; NotFound when the archive has no such member.
Result<std::string> ReadMember(zip_t* archive, const std::string& path, const std::string& name) {
  zip_stat_t st;
  if (zip_stat(archive, name.c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
    return NotFoundError(path + " has no " + name + " member");
  }
  std::unique_ptr<zip_file_t, decltype(&zip_fclose)> member(zip_fopen(archive, name.c_str(), 0),
                                                            zip_fclose);
  if (member == nullptr) return DataLossError(path + ": cannot open " + name);
  std::string bytes(st.size, '\0');
  zip_int64_t n = zip_fread(member.get(), bytes.data(), st.size);
  if (n < 0 || static_cast<zip_uint64_t>(n) != st.size) {
    return DataLossError(path + ": " + name + " is damaged (read " + std::to_string(n) + " of " +
                         std::to_string(st.size) + " bytes)");
  }
  return bytes;
}

Result<std::string> ReadKerasArchive(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(ArchivePtr archive, OpenKerasArchive(path));
  Result<std::string> text = ReadMember(archive.get(), path, "config.json");
  if (text.status().code() == StatusCode::kNotFound) {
    return DataLossError(path + " has no config.json member (is it a Keras 3 .keras file?)");
  }
  return text;
}

}  // namespace

Result<std::string> ReadModelConfigText(const std::string& path) {
  const auto cannot_read = [&] {
    return NotFoundError("model file '" + path +
                         "' does not exist or cannot be read (model.keras names a .json from "
                         "model.to_json() or a .keras file)");
  };
  if (EndsWith(path, ".keras")) {
    if (!Env::Default()->FileExists(path)) return cannot_read();
    return ReadKerasArchive(path);
  }
  Result<std::string> text = Env::Default()->ReadFileToString(path);
  if (!text.ok()) return cannot_read();
  return text;
}

Result<std::string> ReadKerasArchiveMember(const std::string& path, const std::string& member) {
  if (!Env::Default()->FileExists(path)) {
    return NotFoundError("'" + path + "' does not exist or cannot be read");
  }
  TROUPE_ASSIGN_OR_RETURN(ArchivePtr archive, OpenKerasArchive(path));
  return ReadMember(archive.get(), path, member);
}

}  // namespace troupe::keras
