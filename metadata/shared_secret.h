#pragma once
// The shared secret, read from a file (a Kubernetes Secret volume) and re-read when the file
// changes. A stat() at most once a second on the request path, so a rotated secret is in use
// within a second without inotify plumbing, and an unchanged one costs nothing measurable.
// The secret is never logged.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>

#include "core/result.h"

namespace okna::metadata {

class SharedSecret {
 public:
  using Clock = std::chrono::steady_clock;

  /** `path` empty: the empty secret (Neutron's default metadata_proxy_shared_secret). */
  explicit SharedSecret(std::string path,
                        std::chrono::milliseconds recheck = std::chrono::seconds(1));

  /**
   * The current secret, re-reading the file if it changed (checked at most once per recheck
   * period). An error only while the file was never read: after a successful read a broken
   * file keeps the last good secret (logged once). The view is valid until the next get().
   * `now`: the caller's clock (the server's core::Clock); the first call always checks.
   */
  core::Result<std::string_view> get(Clock::time_point now);

  /** How many times the file content was (re)loaded; for tests and logs. */
  int loads() const { return loads_; }

 private:
  core::Status reload();

  std::string path_;
  std::chrono::milliseconds recheck_;
  std::string secret_;
  bool loaded_ = false;
  Clock::time_point nextCheck_{};
  // What the file looked like when read; any difference triggers a re-read.
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  off_t size_ = 0;
  struct timespec mtime_ {};
  struct timespec ctime_ {};
  core::Error lastError_;
  bool errorLogged_ = false;
  int loads_ = 0;
};

}  // namespace okna::metadata
