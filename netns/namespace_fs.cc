#include "netns/namespace_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/logging.h"
#include "netns/enter.h"

namespace okna::netns::detail {
namespace {

core::Error sysError(const std::string& what, int err) {
  return core::makeError(what + ": " + std::strerror(err), err);
}

std::string pathOf(const std::string& name) {
  return std::string(kNetnsRunDir) + "/" + name;
}

// iproute2's netns_add: /run/netns must be a shared mount so that namespaces mounted under it
// propagate to other mount namespaces (and back); if it is not a mount point yet, bind it onto
// itself first, then make it shared.
core::Status makeRunDirShared() {
  if (::mkdir(kNetnsRunDir, 0755) != 0 && errno != EEXIST) {
    return sysError(std::string("mkdir ") + kNetnsRunDir, errno);
  }
  bool boundOnItself = false;
  while (::mount("", kNetnsRunDir, "none", MS_SHARED | MS_REC, nullptr) != 0) {
    if (errno != EINVAL || boundOnItself) {
      return sysError(std::string("mount --make-rshared ") + kNetnsRunDir, errno);
    }
    if (::mount(kNetnsRunDir, kNetnsRunDir, "none", MS_BIND | MS_REC, nullptr) != 0) {
      return sysError(std::string("mount --rbind ") + kNetnsRunDir + " on itself", errno);
    }
    boundOnItself = true;
  }
  return {};
}

// Mounts a new network namespace on `path` from the calling thread, which unshares into it and
// returns to its own namespace before this returns.
core::Status mountNewNamespace(const std::string& name, const std::string& path) {
  const int original = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (original < 0) return sysError("namespace " + name + ": open own namespace", errno);
  core::Status status;
  if (::unshare(CLONE_NEWNET) != 0) {
    status = sysError("namespace " + name + ": unshare(CLONE_NEWNET)", errno);
  } else {
    if (::mount("/proc/thread-self/ns/net", path.c_str(), "none", MS_BIND, nullptr) != 0) {
      status = sysError("namespace " + name + ": bind mount on " + path, errno);
    }
    if (::setns(original, CLONE_NEWNET) != 0) {
      core::logger("netns")->critical("cannot return the thread to its network namespace: {}",
                                      std::strerror(errno));
      std::abort();
    }
  }
  ::close(original);
  return status;
}

core::Error badName(const std::string& name) {
  return core::makeError("namespace '" + name + "': not a name under /run/netns", EINVAL);
}

}  // namespace

core::Status createNamedNamespace(const std::string& name) {
  if (!isNamespaceName(name)) return badName(name);
  if (auto st = makeRunDirShared(); !st) return st;
  const std::string path = pathOf(name);
  int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0 && errno == EEXIST) {
    auto existing = openNamespaceFd(name);
    if (existing) {
      ::close(*existing);
      return core::makeError("namespace " + name + ": already exists", EEXIST);
    }
    // A leftover of an interrupted creation (a file, or a mount of something else): replace it.
    ::umount2(path.c_str(), MNT_DETACH);
    ::unlink(path.c_str());
    fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  }
  if (fd < 0) return sysError("namespace " + name + ": create " + path, errno);
  ::close(fd);
  auto st = mountNewNamespace(name, path);
  if (!st) ::unlink(path.c_str());
  return st;
}

core::Status removeNamedNamespace(const std::string& name) {
  if (!isNamespaceName(name)) return badName(name);
  const std::string path = pathOf(name);
  // EINVAL: not a mount point (a stale file); ENOENT: already gone.
  if (::umount2(path.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
    return sysError("namespace " + name + ": umount " + path, errno);
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return sysError("namespace " + name + ": unlink " + path, errno);
  }
  return {};
}

core::Result<std::vector<std::string>> listNamedNamespaces(const std::string& prefix) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(kNetnsRunDir);
  if (dir == nullptr) {
    if (errno == ENOENT) return names;
    return sysError(std::string("list ") + kNetnsRunDir, errno);
  }
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (name.compare(0, prefix.size(), prefix) == 0) names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace okna::netns::detail
