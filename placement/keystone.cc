#include "placement/keystone.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "core/logging.h"

namespace okna::placement {

using nlohmann::json;

namespace {

// Keystone may send null for any of these (an endpoint without a region): absent values, never
// an exception out of the Placement worker.
std::string text(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}
json list(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_array() ? *it : json::array();
}

std::string withV3(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!url.ends_with("/v3")) url += "/v3";
  return url;
}

std::optional<std::time_t> parseTime(const std::string& s) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &sec) != 6)
    return std::nullopt;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return timegm(&tm);
}

json domain(const std::string& name, const std::string& id) {
  return id.empty() ? json{{"name", name}} : json{{"id", id}};
}

}  // namespace

std::optional<std::int64_t> secondsBetween(const std::string& from, const std::string& to) {
  auto a = parseTime(from);
  auto b = parseTime(to);
  if (!a || !b) return std::nullopt;
  return static_cast<std::int64_t>(*b - *a);
}

Task<core::Result<Session>> StaticAuth::session(bool) {
  std::string url = auth_.endpointOverride;
  while (!url.empty() && url.back() == '/') url.pop_back();
  std::string compute = auth_.computeEndpointOverride;
  while (!compute.empty() && compute.back() == '/') compute.pop_back();
  co_return Session{url, "admin", compute};
}

KeystoneAuth::KeystoneAuth(core::HttpClient& http, const core::Clock& clock, ResolvedAuth auth,
                           std::chrono::milliseconds timeout)
    : http_(http), clock_(clock), auth_(std::move(auth)), timeout_(timeout) {}

KeystoneAuth::~KeystoneAuth() {
  if (inFlight_) inFlight_->cancel();
}

Task<core::Result<Session>> KeystoneAuth::session(bool renew) {
  if (renew) session_.reset();
  if (session_ && clock_.now() < renewAt_) co_return *session_;
  co_return co_await fetch();
}

core::Result<std::string> KeystoneAuth::requestBody() const {
  const AuthConfig& a = auth_.auth;
  json identity;
  json body;
  if (a.type == "v3applicationcredential") {
    std::string secret = a.applicationCredentialSecret;
    if (secret.empty()) {
      auto s =
          readSecretFile(a.applicationCredentialSecretFile, "application credential secret file");
      if (!s) return s.error();
      secret = std::move(*s);
    }
    json cred{{"secret", secret}};
    if (!a.applicationCredentialId.empty()) {
      cred["id"] = a.applicationCredentialId;
    } else {
      cred["name"] = a.applicationCredentialName;
      cred["user"] = a.userId.empty() ? json{{"name", a.username},
                                             {"domain", domain(a.userDomainName, a.userDomainId)}}
                                      : json{{"id", a.userId}};
    }
    identity = {{"methods", {"application_credential"}}, {"application_credential", cred}};
    // An application credential carries its own scope: none may be given.
    body = {{"auth", {{"identity", identity}}}};
  } else {
    std::string password = a.password;
    if (password.empty()) {
      auto p = readSecretFile(a.passwordFile, "password file");
      if (!p) return p.error();
      password = std::move(*p);
    }
    json user = a.userId.empty() ? json{{"name", a.username},
                                        {"domain", domain(a.userDomainName, a.userDomainId)}}
                                 : json{{"id", a.userId}};
    user["password"] = password;
    identity = {{"methods", {"password"}}, {"password", {{"user", user}}}};
    body = {{"auth", {{"identity", identity}}}};
    if (a.systemScope == "all") {
      body["auth"]["scope"] = {{"system", {{"all", true}}}};
    } else if (!a.projectId.empty()) {
      body["auth"]["scope"] = {{"project", {{"id", a.projectId}}}};
    } else if (!a.projectName.empty()) {
      body["auth"]["scope"] = {
          {"project",
           {{"name", a.projectName}, {"domain", domain(a.projectDomainName, a.projectDomainId)}}}};
    }
  }
  return body.dump();
}

Task<core::Result<Session>> KeystoneAuth::fetch() {
  auto body = requestBody();
  if (!body) co_return body.error();
  core::HttpRequest req;
  req.method = "POST";
  req.url = withV3(auth_.auth.authUrl) + "/auth/tokens";
  req.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
  req.body = std::move(*body);
  req.tls = auth_.tls;
  req.totalTimeout = timeout_;
  ++tokenRequests_;
  const auto sentAt = clock_.now();
  auto resp = co_await send(http_, std::move(req), &inFlight_);
  inFlight_.reset();
  const std::string who = "keystone " + withV3(auth_.auth.authUrl) + " (" + auth_.source + ")";
  if (!resp) co_return core::makeError(who + ": " + resp.error().message, resp.error().code);
  if (resp->status != 201) {
    // Keystone's error bodies name the problem, never the secret.
    std::string detail;
    auto j = json::parse(resp->body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_object())
      detail = ": " + j["error"].value("message", std::string());
    co_return core::makeError(
        who + ": token request failed: HTTP " + std::to_string(resp->status) + detail,
        static_cast<int>(resp->status));
  }
  auto token = resp->headers.find("x-subject-token");
  auto j = json::parse(resp->body, nullptr, false);
  if (token == resp->headers.end() || !j.is_object() || !j.contains("token") ||
      !j["token"].is_object())
    co_return core::makeError(who + ": token response without X-Subject-Token or token body", 502);
  const json& t = j["token"];
  Session s;
  s.token = token->second;
  // The catalog's endpoint of a service type at the configured interface and region.
  const auto fromCatalog = [&](const std::string& type) {
    for (const auto& service : list(t, "catalog")) {
      if (!service.is_object() || text(service, "type") != type) continue;
      for (const auto& ep : list(service, "endpoints")) {
        if (!ep.is_object() || text(ep, "interface") != auth_.interface) continue;
        const std::string region =
            text(ep, "region_id").empty() ? text(ep, "region") : text(ep, "region_id");
        if (!auth_.regionName.empty() && region != auth_.regionName) continue;
        if (!text(ep, "url").empty()) return text(ep, "url");
      }
    }
    return std::string();
  };
  s.computeEndpoint = auth_.computeEndpointOverride.empty() ? fromCatalog("compute")
                                                            : auth_.computeEndpointOverride;
  while (!s.computeEndpoint.empty() && s.computeEndpoint.back() == '/')
    s.computeEndpoint.pop_back();
  if (!auth_.endpointOverride.empty()) {
    s.endpoint = auth_.endpointOverride;
  } else {
    s.endpoint = fromCatalog("placement");
    if (s.endpoint.empty())
      co_return core::makeError(
          who + ": no placement endpoint with interface " + auth_.interface +
              (auth_.regionName.empty() ? "" : " in region " + auth_.regionName) +
              " in the token's catalog (or set placement.endpointOverride)",
          404);
  }
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  // Renew from the token's own lifetime (both ends are Keystone's clock, so local clock skew does
  // not matter), measured from when the request left: a margin of a tenth, at most 5 minutes.
  const auto lifetime = secondsBetween(text(t, "issued_at"), text(t, "expires_at")).value_or(3600);
  const std::int64_t margin = std::min<std::int64_t>(300, std::max<std::int64_t>(1, lifetime / 10));
  renewAt_ = sentAt + std::chrono::seconds(std::max<std::int64_t>(0, lifetime - margin));
  session_ = s;
  core::logger("placement")
      ->info(
          "keystone: got a token ({} s lifetime, renewed {} s before expiry) from {}; "
          "placement at {}",
          lifetime, margin, who, s.endpoint);
  co_return s;
}

std::unique_ptr<Authenticator> makeAuthenticator(core::HttpClient& http, const core::Clock& clock,
                                                 ResolvedAuth auth,
                                                 std::chrono::milliseconds timeout) {
  if (auth.auth.type == "none") return std::make_unique<StaticAuth>(std::move(auth));
  return std::make_unique<KeystoneAuth>(http, clock, std::move(auth), timeout);
}

}  // namespace okna::placement
