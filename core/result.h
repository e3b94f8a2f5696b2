#pragma once
// Error values for fallible calls on the event loop. Exceptions never cross the loop: likely
// failures (network, permissions, bad API data) become an Error that the caller retries,
// logs or reports.

#include <string>
#include <utility>
#include <variant>

namespace okna::core {

struct Error {
  // errno, HTTP status, CURLcode or 0; what `message` says decides how to read it.
  int code = 0;
  // Human-readable context, naming the field, file or request that failed.
  std::string message;
};

/** A value or an Error (std::expected is C++23; this is the subset the agent needs). */
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

/** Result<void>: success or an Error. */
struct Status {
  Status() = default;
  Status(Error e) : error_(std::move(e)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Error makeError(std::string message, int code = 0) {
  return Error{code, std::move(message)};
}

}  // namespace okna::core
