#pragma once
// Named network namespaces as iproute2 keeps them: a bind mount of an nsfs file on
// /run/netns/<name>, /run/netns itself a shared mount, so that `ip netns list/exec` and other
// mount namespaces see ours. Internal to netns/.

#include <string>
#include <vector>

#include "core/result.h"

namespace okna::netns::detail {

/** Like `ip netns add`; a stale non-namespace file of that name is replaced. */
core::Status createNamedNamespace(const std::string& name);
/** Unmounts and unlinks /run/netns/<name>; absent is fine. */
core::Status removeNamedNamespace(const std::string& name);
/** Names under /run/netns starting with `prefix`, sorted. */
core::Result<std::vector<std::string>> listNamedNamespaces(const std::string& prefix);

}  // namespace okna::netns::detail
