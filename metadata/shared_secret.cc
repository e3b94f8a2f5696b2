#include "metadata/shared_secret.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "core/logging.h"

namespace okna::metadata {

namespace {

bool sameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

}  // namespace

SharedSecret::SharedSecret(std::string path, std::chrono::milliseconds recheck)
    : path_(std::move(path)), recheck_(recheck) {
  if (path_.empty()) {
    loaded_ = true;
    return;
  }
  if (auto s = reload(); !s.ok()) lastError_ = s.error();
}

core::Result<std::string_view> SharedSecret::get(Clock::time_point now) {
  if (!path_.empty() && now >= nextCheck_) {
    nextCheck_ = now + recheck_;
    struct stat st {};
    const bool statOk = ::stat(path_.c_str(), &st) == 0;
    const bool changed = !statOk || !loaded_ || st.st_dev != dev_ || st.st_ino != ino_ ||
                         st.st_size != size_ || !sameTime(st.st_mtim, mtime_) ||
                         !sameTime(st.st_ctim, ctime_);
    if (changed) {
      if (auto s = reload(); !s.ok()) {
        lastError_ = s.error();
        if (!errorLogged_) {
          errorLogged_ = true;
          core::logger("metadata")
              ->error("{}{}", lastError_.message, loaded_ ? " (keeping the previous secret)" : "");
        }
      }
    }
  }
  if (!loaded_) return lastError_;
  return std::string_view(secret_);
}

core::Status SharedSecret::reload() {
  struct stat st {};
  std::ifstream in(path_, std::ios::binary);
  if (!in || ::stat(path_.c_str(), &st) != 0)
    return core::makeError("metadata.sharedSecretFile " + path_ + ": " + std::strerror(errno),
                           errno);
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  // Surrounding whitespace removed, as oslo.config strips Nova's (and Neutron's)
  // metadata_proxy_shared_secret when it reads it: a trailing space or newline left by an
  // editor or `echo secret > file` would otherwise make every signature differ from Nova's.
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  secret.erase(0, std::min(secret.size(), secret.find_first_not_of(kSpace)));
  secret.erase(secret.find_last_not_of(kSpace) + 1);
  const bool firstLoad = !loaded_;
  const bool different = secret != secret_;
  secret_ = std::move(secret);
  loaded_ = true;
  errorLogged_ = false;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  size_ = st.st_size;
  mtime_ = st.st_mtim;
  ctime_ = st.st_ctim;
  ++loads_;
  if (!firstLoad && different)
    core::logger("metadata")->info("shared secret reloaded from {}", path_);
  return {};
}

}  // namespace okna::metadata
