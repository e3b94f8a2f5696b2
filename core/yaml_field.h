#pragma once
// Strict reading of YAML configuration: every value is read through a YamlField that knows its
// file, position and dotted path, so that an unknown key or a bad value is reported as
// "agent.yaml:12:5: nodeRoles.roles.compute.lable: unknown key (expected one of: ...)".
// Parse functions throw ConfigError; loaders catch it once and return a core::Error, so a
// config error never starts a half-configured agent.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace okna::core {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class YamlField {
 public:
  YamlField(YAML::Node node, std::string path, std::shared_ptr<const std::string> file);
  /** The root of a document. */
  static YamlField root(YAML::Node node, const std::string& file);

  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& why) const;
  /** Like fail(), for a message that already names the field (it gets file and position only). */
  [[noreturn]] void failWithMessage(const std::string& message) const;

  /** Requires a mapping whose keys are all in `allowed`. */
  void expectKeys(std::initializer_list<const char*> allowed) const;
  /** The child, if present and not null. */
  std::optional<YamlField> get(const std::string& key) const;

  std::string asString() const;
  bool asBool() const;
  std::int64_t asInt(std::int64_t min, std::int64_t max) const;
  double asDouble(double min, double max) const;
  /** One of `choices`. */
  std::string asEnum(std::initializer_list<const char*> choices) const;
  std::vector<YamlField> items() const;
  std::vector<std::pair<std::string, YamlField>> entries() const;
  std::vector<std::string> asStringList() const;

 private:
  std::string where() const;
  std::string position() const;
  YAML::Node node_;
  std::string path_;
  std::shared_ptr<const std::string> file_;
};

/** Runs a parse function, turning ConfigError (and YAML syntax errors) into an Error. */
template <typename F>
auto catchConfigErrors(F&& parse) -> Result<decltype(parse())> {
  try {
    return parse();
  } catch (const ConfigError& e) {
    return makeError(e.what());
  } catch (const YAML::Exception& e) {
    return makeError(e.what());
  }
}

/** YAML to JSON with the YAML 1.2 core schema for plain scalars (quoted scalars stay strings). */
nlohmann::json yamlToJson(const YAML::Node& node);

/** Reads a JSON or YAML document (JSON is tried when the text starts with '{' or '['). */
Result<nlohmann::json> loadJsonOrYaml(const std::string& path);

}  // namespace okna::core
