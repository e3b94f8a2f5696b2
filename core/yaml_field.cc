#include "core/yaml_field.h"

#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

namespace okna::core {

YamlField::YamlField(YAML::Node node, std::string path, std::shared_ptr<const std::string> file)
    : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)) {}

YamlField YamlField::root(YAML::Node node, const std::string& file) {
  return YamlField(std::move(node), "", std::make_shared<const std::string>(file));
}

std::string YamlField::position() const {
  std::string out = *file_;
  const YAML::Mark mark = node_.Mark();
  if (!mark.is_null())
    out += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  return out;
}

std::string YamlField::where() const {
  return position() + ": " + (path_.empty() ? "(top level)" : path_);
}

void YamlField::fail(const std::string& why) const {
  throw ConfigError(where() + ": " + why);
}

void YamlField::failWithMessage(const std::string& message) const {
  throw ConfigError(position() + ": " + message);
}

void YamlField::expectKeys(std::initializer_list<const char*> allowed) const {
  if (!node_.IsMap()) fail("expected a mapping");
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      YamlField(kv.first, path_.empty() ? key : path_ + "." + key, file_)
          .fail("unknown key (expected one of: " + list + ")");
    }
  }
}

std::optional<YamlField> YamlField::get(const std::string& key) const {
  if (!node_.IsMap()) fail("expected a mapping");
  YAML::Node child = node_[key];
  if (!child || child.IsNull()) return std::nullopt;
  return YamlField(child, path_.empty() ? key : path_ + "." + key, file_);
}

std::string YamlField::asString() const {
  if (!node_.IsScalar()) fail("expected a string");
  return node_.as<std::string>();
}

bool YamlField::asBool() const {
  const std::string s = asString();
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  fail("\"" + s + "\" is not true or false");
}

std::int64_t YamlField::asInt(std::int64_t min, std::int64_t max) const {
  const std::string s = asString();
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) fail("\"" + s + "\" is not an integer");
  if (v < min || v > max)
    fail(std::to_string(v) + " is out of range [" + std::to_string(min) + ", " +
         std::to_string(max) + "]");
  return v;
}

double YamlField::asDouble(double min, double max) const {
  const std::string s = asString();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) fail("\"" + s + "\" is not a number");
  if (!(v >= min && v <= max)) {
    std::ostringstream os;
    os << s << " is out of range [" << min << ", " << max << "]";
    fail(os.str());
  }
  return v;
}

std::string YamlField::asEnum(std::initializer_list<const char*> choices) const {
  const std::string s = asString();
  std::string list;
  for (const char* c : choices) {
    if (s == c) return s;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  fail("\"" + s + "\" is not one of: " + list);
}

std::vector<YamlField> YamlField::items() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<YamlField> out;
  for (size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], path_ + "[" + std::to_string(i) + "]", file_);
  return out;
}

std::vector<std::pair<std::string, YamlField>> YamlField::entries() const {
  if (!node_.IsMap()) fail("expected a mapping");
  std::vector<std::pair<std::string, YamlField>> out;
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    out.emplace_back(key, YamlField(kv.second, path_.empty() ? key : path_ + "." + key, file_));
  }
  return out;
}

std::vector<std::string> YamlField::asStringList() const {
  std::vector<std::string> out;
  for (const auto& item : items()) out.push_back(item.asString());
  return out;
}

nlohmann::json yamlToJson(const YAML::Node& node) {
  using nlohmann::json;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(yamlToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = yamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string s = node.Scalar();
  // Quoted scalars carry the non-specific tag "!": always strings.
  if (node.Tag() != "?") return s;
  static const std::regex intRe("[-+]?[0-9]+");
  static const std::regex floatRe(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty()) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (std::regex_match(s, intRe)) {
    try {
      return std::stoll(s);
    } catch (const std::out_of_range&) {
      return s;
    }
  }
  if (std::regex_match(s, floatRe)) return std::stod(s);
  return s;
}

Result<nlohmann::json> loadJsonOrYaml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path + ": cannot be read", errno);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return makeError(path + ": empty file");
  if (text[first] == '{' || text[first] == '[') {
    try {
      return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      return makeError(path + ": invalid JSON: " + e.what());
    }
  }
  try {
    return yamlToJson(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    return makeError(path + ": invalid YAML: " + e.what());
  }
}

}  // namespace okna::core
