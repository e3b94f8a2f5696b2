#pragma once
// The legacy ethtool ioctls for tx checksumming, TSO and GSO, on an interface of the calling
// thread's network namespace. Internal to netns/ (the public entry is netns::disableOffloads).

#include <string>

#include "core/result.h"

namespace okna::netns::detail {

/** True when tx checksumming, TSO and GSO are all off on `iface`. */
core::Result<bool> offloadsOff(const std::string& iface);
/** Turns them off (tx checksumming first: TSO depends on it). */
core::Status turnOffloadsOff(const std::string& iface);

}  // namespace okna::netns::detail
