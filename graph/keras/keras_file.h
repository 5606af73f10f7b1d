// Reads a Keras model's config text: a .json file written from model.to_json(), or the
// config.json member of a .keras archive (a zip, read with libzip).
#pragma once

#include <string>

#include "core/result.h"

namespace troupe::keras {

// NotFound naming the path when it does not exist; DataLoss for a damaged .keras archive.
Result<std::string> ReadModelConfigText(const std::string& path);

// The bytes of `member` ("model.weights.h5") of the .keras archive at `path`: NotFound when
// the file does not exist or the archive has no such member, DataLoss when it is damaged.
Result<std::string> ReadKerasArchiveMember(const std::string& path, const std::string& member);

}  // namespace troupe::keras
