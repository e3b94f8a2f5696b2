#pragma once
// Which traits the agent itself added to each provider, remembered across restarts in a small
// JSON file on the host (a hostPath), so that the agent removes only what it added and never an
// operator's or Nova's trait. Placement has no per-trait owner field to hold this instead.

#include <map>
#include <optional>
#include <string>

#include "core/result.h"
#include "placement/types.h"
#include "placement/zones.h"

namespace okna::placement {

class OwnedTraitsStore {
 public:
  /** `path` empty: kept in memory only (lost on restart; the agent then removes nothing). */
  explicit OwnedTraitsStore(std::string path) : path_(std::move(path)) {}

  /** Reads the file; a missing file is an empty store, a corrupt one an error (kept empty). */
  core::Status load();
  Traits owned(const std::string& providerUuid) const;
  /** Records and, when it changed, rewrites the file atomically (temp file + rename). */
  core::Status set(const std::string& providerUuid, const Traits& traits);
  /** The zone aggregate the agent joined for its host (issue #29): only it is ever left. */
  const std::optional<JoinedZone>& joinedZone() const { return joinedZone_; }
  core::Status setJoinedZone(const std::optional<JoinedZone>& zone);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  core::Status save() const;

  std::map<std::string, Traits> owned_;
  std::optional<JoinedZone> joinedZone_;
};

}  // namespace okna::placement
