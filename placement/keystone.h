#pragma once
// Tokens and the Placement endpoint. KeystoneAuth gets a Keystone v3 token (password or
// application credential) through the agent's HttpClient, caches it, renews it before it expires
// and on demand (after a 401), and finds Placement in the token's catalog. Tokens, passwords and
// secrets are never logged.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/clock.h"
#include "placement/async_http.h"
#include "placement/clouds_yaml.h"

namespace okna::placement {

struct Session {
  // Placement's base URL, without a trailing slash.
  std::string endpoint;
  // X-Auth-Token value.
  std::string token;
  // Nova's compute API base URL ("https://nova/v2.1"), or empty when the catalog has none.
  std::string computeEndpoint;
};

class Authenticator {
 public:
  virtual ~Authenticator() = default;
  /** A valid session; `renew` drops the cached token first (after a 401). */
  virtual Task<core::Result<Session>> session(bool renew) = 0;
  /** Whether renewing can help after a 401 (false for a static token). */
  virtual bool canRenew() const = 0;
  /** TLS settings for Placement requests (cacert, verify). */
  virtual const core::TlsOptions& tls() const = 0;
};

/** auth type none: a fixed endpoint and Placement's noauth2 admin token ("admin"). Dev/tests. */
class StaticAuth final : public Authenticator {
 public:
  explicit StaticAuth(ResolvedAuth auth) : auth_(std::move(auth)) {}
  // Authenticator
  Task<core::Result<Session>> session(bool renew) override;
  bool canRenew() const override { return false; }
  const core::TlsOptions& tls() const override { return auth_.tls; }

 private:
  ResolvedAuth auth_;
};

class KeystoneAuth final : public Authenticator {
 public:
  using Clock = std::chrono::steady_clock;
  /** `clock`: when the cached token is renewed. */
  KeystoneAuth(core::HttpClient& http, const core::Clock& clock, ResolvedAuth auth,
               std::chrono::milliseconds timeout);
  ~KeystoneAuth() override;
  KeystoneAuth(const KeystoneAuth&) = delete;
  KeystoneAuth& operator=(const KeystoneAuth&) = delete;

  // Authenticator
  Task<core::Result<Session>> session(bool renew) override;
  bool canRenew() const override { return true; }
  const core::TlsOptions& tls() const override { return auth_.tls; }

  /** Token requests sent so far (tests, bench). */
  unsigned tokenRequests() const { return tokenRequests_; }
  /** When the cached token will be renewed (tests). */
  std::optional<Clock::time_point> renewAt() const {
    return session_ ? std::optional(renewAt_) : std::nullopt;
  }

 private:
  Task<core::Result<Session>> fetch();
  core::Result<std::string> requestBody() const;

  core::HttpClient& http_;
  const core::Clock& clock_;
  ResolvedAuth auth_;
  std::chrono::milliseconds timeout_;
  std::optional<Session> session_;
  Clock::time_point renewAt_{};
  unsigned tokenRequests_ = 0;
  core::HttpRequestHandlePtr inFlight_;
};

/** KeystoneAuth, or StaticAuth for auth type none. */
std::unique_ptr<Authenticator> makeAuthenticator(core::HttpClient& http, const core::Clock& clock,
                                                 ResolvedAuth auth,
                                                 std::chrono::milliseconds timeout);

/** Seconds between two Keystone timestamps ("2026-11-02T10:00:00.000000Z"); nullopt if unparsable.
 */
std::optional<std::int64_t> secondsBetween(const std::string& from, const std::string& to);

}  // namespace okna::placement
