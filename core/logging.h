#pragma once
// One named spdlog logger per component ("k8s", "roles", "ovsdb", ...), all writing to stderr
// in text or JSON, each with its own level. Secrets are never passed to a logger.

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <string>

#include "core/result.h"

namespace okna::core {

struct LogConfig {
  // "text" or "json".
  std::string format = "text";
  // Default level: trace, debug, info, warn, error, critical, off.
  std::string level = "info";
  // Per-component levels overriding the default.
  std::map<std::string, std::string> components;
};

/** Validates the config and installs it; loggers made earlier are updated. */
Status setupLogging(const LogConfig& config);

/** The logger of a component, created on first use. */
std::shared_ptr<spdlog::logger> logger(const std::string& component);

/** True when `level` names an spdlog level. */
bool isLogLevel(const std::string& level);

}  // namespace okna::core
