#include "netns/enter.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/logging.h"

namespace okna::netns {
namespace {

core::Error sysError(const std::string& what, int err) {
  return core::makeError(what + ": " + std::strerror(err), err);
}

// Returns the calling thread to `originalFd` when it goes out of scope, also on exceptions.
class ReturnToNamespace {
 public:
  explicit ReturnToNamespace(int originalFd) : fd_(originalFd) {}
  ~ReturnToNamespace() {
    if (::setns(fd_, CLONE_NEWNET) != 0) {
      core::logger("netns")->critical(
          "cannot return the thread to its network namespace: {}; aborting rather than "
          "configuring the wrong network",
          std::strerror(errno));
      std::abort();
    }
    ::close(fd_);
  }
  ReturnToNamespace(const ReturnToNamespace&) = delete;
  ReturnToNamespace& operator=(const ReturnToNamespace&) = delete;

 private:
  int fd_;
};

}  // namespace

bool isNamespaceName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

core::Result<int> openNamespaceFd(const std::string& name) {
  if (!isNamespaceName(name)) {
    return core::makeError("namespace '" + name + "': not a name under /run/netns", EINVAL);
  }
  const std::string path = std::string(kNetnsRunDir) + "/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sysError("namespace " + name + ": open " + path, errno);
  struct statfs fs {};
  // A plain file left by an interrupted creation is not a namespace.
  if (::fstatfs(fd, &fs) != 0 || fs.f_type != NSFS_MAGIC ||
      ::ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET) {
    ::close(fd);
    return core::makeError("namespace " + name + ": " + path + " is not a network namespace",
                           ENOENT);
  }
  return fd;
}

core::Status runInNamespace(const std::string& name, const std::function<core::Status()>& fn) {
  if (name.empty()) return fn();
  auto target = openNamespaceFd(name);
  if (!target) return target.error();
  const int original = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (original < 0) {
    const int err = errno;
    ::close(*target);
    return sysError("namespace " + name + ": open /proc/thread-self/ns/net", err);
  }
  if (::setns(*target, CLONE_NEWNET) != 0) {
    const int err = errno;
    ::close(*target);
    ::close(original);
    return sysError("namespace " + name + ": setns", err);
  }
  ::close(*target);
  ReturnToNamespace back(original);
  return fn();
}

}  // namespace okna::netns
