#include "core/http_fields.h"

#include "core/listener_guard.h"

namespace okna::core {

namespace {

bool isTchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

// RFC 9110 field-value: visible characters, obs-text, SP and HTAB; no other control.
bool isFieldValue(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

// A URL goes into the request line: no control, no space.
bool isUrlSafe(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

bool isHttpToken(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!isTchar(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string requestFramingProblem(const HttpRequest& request) {
  if (!isHttpToken(request.method))
    return "the method \"" + escapeForLog(request.method, 32) + "\" is not an HTTP token";
  if (!isUrlSafe(request.url)) return "the URL holds a control character or a space";
  for (const auto& [name, value] : request.headers) {
    if (!isHttpToken(name))
      return "the header name \"" + escapeForLog(name, 64) + "\" is not an HTTP token";
    if (!isFieldValue(value))
      return "the value of header " + name + " holds CR, LF, NUL or another control character";
  }
  return "";
}

std::string responseTooLargeMessage(std::size_t limit) {
  return "the response is larger than its limit of " + std::to_string(limit) +
         " bytes (HttpRequest::maxResponseBytes); not read further";
}

}  // namespace okna::core
