#pragma once
// Running code on the calling thread inside a named network namespace (/run/netns/<name>).
// setns(CLONE_NEWNET) changes only the calling thread, which returns to its original namespace
// before runInNamespace returns, also on error. Use from a worker thread, never the event loop.

#include <functional>
#include <string>

#include "core/result.h"

namespace okna::netns {

/** "/run/netns" */
inline constexpr const char* kNetnsRunDir = "/run/netns";

/**
 * Enters namespace `name` ("" = stay where we are), runs `fn`, comes back. Sockets `fn` opens
 * stay in that namespace. If the thread cannot return to its namespace the process aborts: a
 * thread left in the wrong namespace would silently configure the wrong network.
 */
core::Status runInNamespace(const std::string& name, const std::function<core::Status()>& fn);

/** Non-empty, not "." or "..", no '/' or NUL: a file name directly under /run/netns. */
bool isNamespaceName(const std::string& name);

/** An open fd (O_CLOEXEC) on /run/netns/<name>; ENOENT when it is not a network namespace. */
core::Result<int> openNamespaceFd(const std::string& name);

}  // namespace okna::netns
