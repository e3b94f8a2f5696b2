#include "chassis/vswitchd_probe.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace okna::ovsdb {

namespace {

// 0 when `path` accepts a connection, else the errno of connect() (or of socket()).
int connectUnix(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) return ENAMETOOLONG;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  int error = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    error = errno;
  ::close(fd);
  // A full backlog (EAGAIN) still means a listener: the daemon is there, busy.
  return error == EAGAIN ? 0 : error;
}

}  // namespace

VswitchdStatus UnixctlVswitchdProbe::check() {
  const std::string pidFile = runDir_ + "/ovs-vswitchd.pid";
  std::ifstream in(pidFile);
  long pid = 0;
  if (!in || !(in >> pid) || pid <= 0)
    return {false, in ? pidFile + " holds no pid" : pidFile + ": " + std::strerror(ENOENT)};
  const std::string withPid = runDir_ + "/ovs-vswitchd." + std::to_string(pid) + ".ctl";
  const std::string fixed = runDir_ + "/ovs-vswitchd.ctl";
  int error = connectUnix(withPid);
  std::string socket = withPid;
  if (error == ENOENT) {
    error = connectUnix(fixed);
    if (error != ENOENT) socket = fixed;
  }
  if (error == 0) return {true, "pid " + std::to_string(pid) + ", unixctl " + socket};
  // A socket the agent may not connect to says nothing about the daemon: a permission mistake
  // must not hold every node unready. Taken for running, with the reason in the detail.
  if (error == EACCES || error == EPERM)
    return {true, "pid " + std::to_string(pid) + ", unixctl " + socket +
                      " not checked: " + std::strerror(error)};
  if (error == ENOENT)
    return {false, "pid " + std::to_string(pid) + " has no unixctl socket (" + withPid + ", " +
                       fixed + ")"};
  return {false, "pid " + std::to_string(pid) + ": " + socket + ": " + std::strerror(error)};
}

}  // namespace okna::ovsdb
