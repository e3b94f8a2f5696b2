#include "agent/node_selector.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

namespace okna::agent {

namespace {

bool parseInt64(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  const char* begin = s.data();
  if (*begin == '+') ++begin;  // strconv.ParseInt accepts a leading sign
  auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool isAlnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// A label name: 1-63 of [A-Za-z0-9_.-], starting and ending alphanumeric.
bool isQualifiedName(const std::string& n) {
  if (n.empty() || n.size() > 63 || !isAlnum(n.front()) || !isAlnum(n.back())) return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return isAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A DNS-1123 subdomain: lower-case labels of [a-z0-9-] joined by dots, at most 253 chars.
bool isDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    if (dot == std::string::npos) dot = s.size();
    const std::string label = s.substr(start, dot - start);
    if (label.empty() || label.size() > 63) return false;
    auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!ok(label.front()) || !ok(label.back())) return false;
    if (!std::all_of(label.begin(), label.end(), [&](char c) { return ok(c) || c == '-'; }))
      return false;
    start = dot + 1;
    if (dot == s.size()) break;
  }
  return true;
}

bool matchesRequirement(const SelectorRequirement& r, const k8s::StringMap& labels) {
  auto it = labels.find(r.key);
  const bool present = it != labels.end();
  const auto contains = [&](const std::string& v) {
    return std::find(r.values.begin(), r.values.end(), v) != r.values.end();
  };
  if (r.op == "In") return present && contains(it->second);
  if (r.op == "NotIn") return !present || !contains(it->second);
  if (r.op == "Exists") return present;
  if (r.op == "DoesNotExist") return !present;
  if (r.op == "Gt" || r.op == "Lt") {
    std::int64_t have = 0, want = 0;
    // A label value that is not an integer does not match (the scheduler's behaviour).
    if (!present || r.values.size() != 1 || !parseInt64(it->second, have) ||
        !parseInt64(r.values[0], want))
      return false;
    return r.op == "Gt" ? have > want : have < want;
  }
  return false;
}

core::Status validateRequirement(const SelectorRequirement& r, const std::string& path,
                                 bool field) {
  if (field) {
    if (r.key != "metadata.name")
      return core::makeError(path + ".key: \"" + r.key +
                             "\": only metadata.name is supported in matchFields");
    if (r.op != "In" && r.op != "NotIn")
      return core::makeError(path + ".operator: \"" + r.op + "\": matchFields allows In and NotIn");
    if (r.values.size() != 1)
      return core::makeError(path + ".values: must have exactly one value for metadata.name");
    return {};
  }
  if (!isValidLabelKey(r.key))
    return core::makeError(path + ".key: \"" + r.key + "\" is not a valid label key");
  if (r.op == "In" || r.op == "NotIn") {
    if (r.values.empty()) return core::makeError(path + ".values: must be non-empty for " + r.op);
  } else if (r.op == "Exists" || r.op == "DoesNotExist") {
    if (!r.values.empty()) return core::makeError(path + ".values: must be empty for " + r.op);
  } else if (r.op == "Gt" || r.op == "Lt") {
    std::int64_t v = 0;
    if (r.values.size() != 1)
      return core::makeError(path + ".values: must have exactly one value for " + r.op);
    if (!parseInt64(r.values[0], v))
      return core::makeError(path + ".values[0]: \"" + r.values[0] + "\" is not an integer");
  } else {
    return core::makeError(path + ".operator: \"" + r.op +
                           "\" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt");
  }
  return {};
}

}  // namespace

bool isValidLabelKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return isQualifiedName(key);
  return isDnsSubdomain(key.substr(0, slash)) && isQualifiedName(key.substr(slash + 1));
}

core::Status validateSelectorTerms(const std::vector<SelectorTerm>& terms,
                                   const std::string& path) {
  if (terms.empty()) return core::makeError(path + ": must have at least one term");
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string tp = path + "[" + std::to_string(t) + "]";
    for (size_t i = 0; i < terms[t].matchExpressions.size(); ++i)
      if (auto s = validateRequirement(terms[t].matchExpressions[i],
                                       tp + ".matchExpressions[" + std::to_string(i) + "]", false);
          !s)
        return s;
    for (size_t i = 0; i < terms[t].matchFields.size(); ++i)
      if (auto s = validateRequirement(terms[t].matchFields[i],
                                       tp + ".matchFields[" + std::to_string(i) + "]", true);
          !s)
        return s;
  }
  return {};
}

bool matchesSelectorTerms(const std::vector<SelectorTerm>& terms, const k8s::StringMap& labels,
                          const std::string& nodeName) {
  const k8s::StringMap fields{{"metadata.name", nodeName}};
  return std::any_of(terms.begin(), terms.end(), [&](const SelectorTerm& term) {
    // A term with no requirements selects nothing (k8s.io/component-helpers nodeaffinity).
    if (term.matchExpressions.empty() && term.matchFields.empty()) return false;
    return std::all_of(
               term.matchExpressions.begin(), term.matchExpressions.end(),
               [&](const SelectorRequirement& r) { return matchesRequirement(r, labels); }) &&
           std::all_of(term.matchFields.begin(), term.matchFields.end(),
                       [&](const SelectorRequirement& r) { return matchesRequirement(r, fields); });
  });
}

}  // namespace okna::agent
