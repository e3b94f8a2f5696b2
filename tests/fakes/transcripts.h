#pragma once
// Reads the kube-apiserver captures in tests/data/transcripts: the response body is everything
// after the last "=== RESPONSE BODY" marker line; watch bodies are raw HTTP chunked framing.

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace okna::testing {

inline std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string transcriptBody(const std::string& path) {
  const std::string text = readWholeFile(path);
  const auto marker = text.rfind("\n=== RESPONSE BODY");
  if (marker == std::string::npos) throw std::runtime_error(path + ": no RESPONSE BODY marker");
  const auto eol = text.find('\n', marker + 1);
  return text.substr(eol + 1);
}

/** The chunks of an HTTP/1.1 chunked body, in order, without framing. */
inline std::vector<std::string> dechunk(const std::string& raw) {
  std::vector<std::string> chunks;
  size_t pos = 0;
  while (pos < raw.size()) {
    const auto eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) throw std::runtime_error("chunk size line without CRLF");
    const size_t size = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
    if (size == 0) break;
    chunks.push_back(raw.substr(eol + 2, size));
    pos = eol + 2 + size + 2;
  }
  return chunks;
}

}  // namespace okna::testing
