#include "placement/keystone.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "placement/client.h"
#include "tests/fakes/fake_http_client.h"

namespace okna::placement {
namespace {

using nlohmann::json;

const char* kTokenBody = R"({"token": {"issued_at": "2026-11-02T10:00:00.000000Z",
  "expires_at": "2026-11-02T11:00:00.000000Z",
  "catalog": [
    {"type": "identity", "endpoints": [{"interface": "public", "region_id": "RegionOne", "url": "http://k"}]},
    {"type": "placement", "endpoints": [
      {"interface": "public", "region_id": "RegionOne", "url": "http://placement-public/"},
      {"interface": "internal", "region_id": "RegionTwo", "url": "http://placement-two"},
      {"interface": "internal", "region_id": "RegionOne", "url": "http://placement-internal"}]}]}})";

class KeystoneTest : public ::testing::Test {
 protected:
  ResolvedAuth passwordAuth() {
    ResolvedAuth a;
    a.auth.type = "password";
    a.auth.authUrl = "http://k:5000";
    a.auth.username = "agent";
    a.auth.password = "pw-secret";
    a.auth.projectName = "service";
    a.interface = "internal";
    a.regionName = "RegionOne";
    return a;
  }
  void answerToken(const std::string& token) {
    auto p = http_.next();
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(p->request.url, "http://k:5000/v3/auth/tokens");
    p->response.headers["x-subject-token"] = token;
    p->reply(201, kTokenBody);
  }
  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  testing::FakeHttpClient http_;
};

TEST_F(KeystoneTest, PasswordTokenCatalogAndRenewalOn401) {
  KeystoneAuth auth(http_, clock_, passwordAuth(), std::chrono::seconds(5));
  ApiImpl api(http_, auth, std::chrono::seconds(5));
  std::optional<core::Result<std::string>> got;
  boost::asio::co_spawn(
      io_, [&]() -> Task<void> { got = co_await api.maxMicroversion(); }, boost::asio::detached);
  io_.poll();

  auto tokenReq = http_.all().back();
  const json body = json::parse(tokenReq->request.body);
  EXPECT_EQ(body["auth"]["identity"]["methods"][0], "password");
  EXPECT_EQ(body["auth"]["identity"]["password"]["user"]["name"], "agent");
  EXPECT_EQ(body["auth"]["scope"]["project"]["name"], "service");
  EXPECT_EQ(body["auth"]["scope"]["project"]["domain"]["name"], "Default");
  answerToken("tok-1");

  // The first Placement call goes to the internal RegionOne endpoint with the token.
  auto first = http_.next();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->request.url, "http://placement-internal/");
  EXPECT_EQ(first->request.headers.at("X-Auth-Token"), "tok-1");
  EXPECT_EQ(first->request.headers.at("OpenStack-API-Version"), "placement 1.14");
  first->reply(401, R"({"error": "expired"})");
  // One renewal, then the same call again.
  answerToken("tok-2");
  auto retry = http_.next();
  ASSERT_NE(retry, nullptr);
  EXPECT_EQ(retry->request.headers.at("X-Auth-Token"), "tok-2");
  retry->reply(200,
               R"({"versions": [{"id": "v1.0", "max_version": "1.39", "min_version": "1.0"}]})");
  io_.poll();
  ASSERT_TRUE(got && got->ok());
  EXPECT_EQ(**got, "1.39");
  EXPECT_EQ(auth.tokenRequests(), 2u);
  // Renewed before expiry: a 3600 s token, 300 s early.
  ASSERT_TRUE(auth.renewAt());
  const auto left = *auth.renewAt() - std::chrono::steady_clock::now();
  EXPECT_GT(left, std::chrono::seconds(3200));
  EXPECT_LE(left, std::chrono::seconds(3300));
}

TEST_F(KeystoneTest, ApplicationCredentialBodyHasNoScope) {
  ResolvedAuth a = passwordAuth();
  a.auth.type = "v3applicationcredential";
  a.auth.applicationCredentialId = "ac-id";
  a.auth.applicationCredentialSecret = "ac-secret";
  KeystoneAuth auth(http_, clock_, a, std::chrono::seconds(5));
  boost::asio::co_spawn(
      io_, [&]() -> Task<void> { co_await auth.session(false); }, boost::asio::detached);
  io_.poll();
  const json body = json::parse(http_.all().back()->request.body);
  EXPECT_EQ(body["auth"]["identity"]["methods"][0], "application_credential");
  EXPECT_EQ(body["auth"]["identity"]["application_credential"]["id"], "ac-id");
  EXPECT_FALSE(body["auth"].contains("scope"));
}

TEST_F(KeystoneTest, FailuresAreClearAndSecretFree) {
  KeystoneAuth auth(http_, clock_, passwordAuth(), std::chrono::seconds(5));
  std::optional<core::Result<Session>> got;
  boost::asio::co_spawn(
      io_, [&]() -> Task<void> { got = co_await auth.session(false); }, boost::asio::detached);
  io_.poll();
  http_.next()->reply(
      401,
      R"({"error": {"code": 401, "message": "The request you have made requires authentication."}})");
  ASSERT_TRUE(got && !got->ok());
  EXPECT_NE(got->error().message.find("HTTP 401: The request you have made"), std::string::npos);
  EXPECT_EQ(got->error().message.find("pw-secret"), std::string::npos);

  ResolvedAuth noRegion = passwordAuth();
  noRegion.regionName = "Nowhere";
  KeystoneAuth other(http_, clock_, noRegion, std::chrono::seconds(5));
  boost::asio::co_spawn(
      io_, [&]() -> Task<void> { got = co_await other.session(false); }, boost::asio::detached);
  io_.poll();
  auto p = http_.next();
  p->response.headers["x-subject-token"] = "t";
  p->reply(201, kTokenBody);
  ASSERT_TRUE(got && !got->ok());
  EXPECT_NE(
      got->error().message.find("no placement endpoint with interface internal in region Nowhere"),
      std::string::npos);
}

// Issue 10: a catalog endpoint with `"region_id": null` (Keystone allows endpoints without a
// region) threw out of the Placement worker. Nulls and odd types are "absent".
TEST_F(KeystoneTest, NullsInTheCatalogAreAbsentValues) {
  ResolvedAuth a = passwordAuth();
  a.regionName = "";
  KeystoneAuth auth(http_, clock_, a, std::chrono::seconds(5));
  std::optional<core::Result<Session>> got;
  boost::asio::co_spawn(
      io_, [&]() -> Task<void> { got = co_await auth.session(false); }, boost::asio::detached);
  io_.poll();
  auto p = http_.next();
  ASSERT_NE(p, nullptr);
  p->response.headers["x-subject-token"] = "t";
  p->reply(201, R"({"token": {"issued_at": null, "expires_at": 7, "catalog": [
    {"type": null, "endpoints": null},
    {"type": "placement", "endpoints": [
      {"interface": "internal", "region_id": null, "region": null, "url": null},
      {"interface": "internal", "region_id": null, "url": "http://placement-noregion"}]}]}})");
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->ok()) << got->error().message;
  EXPECT_EQ((*got)->endpoint, "http://placement-noregion");
}

// Availability zones (issue #29): Nova's compute endpoint from the same catalog, same interface
// and region as Placement; absent is not an error for Placement (only for the zone applier).
TEST_F(KeystoneTest, ComputeEndpointFromTheSameCatalog) {
  ResolvedAuth a = passwordAuth();
  KeystoneAuth auth(http_, clock_, a, std::chrono::seconds(5));
  std::optional<core::Result<Session>> got;
  boost::asio::co_spawn(
      io_, [&]() -> Task<void> { got = co_await auth.session(false); }, boost::asio::detached);
  io_.poll();
  auto p = http_.next();
  ASSERT_NE(p, nullptr);
  p->response.headers["x-subject-token"] = "t";
  json body = json::parse(kTokenBody);
  body["token"]["catalog"].push_back(
      {{"type", "compute"},
       {"endpoints",
        {{{"interface", "public"}, {"region_id", "RegionOne"}, {"url", "http://nova-public/v2.1"}},
         {{"interface", a.interface},
          {"region_id", a.regionName},
          {"url", "http://nova/v2.1/"}}}}});
  p->reply(201, body.dump());
  ASSERT_TRUE(got && got->ok()) << got->error().message;
  EXPECT_EQ((*got)->computeEndpoint, "http://nova/v2.1");
  EXPECT_EQ((*got)->endpoint, "http://placement-internal");

  KeystoneAuth without(http_, clock_, a, std::chrono::seconds(5));
  got.reset();
  boost::asio::co_spawn(
      io_, [&]() -> Task<void> { got = co_await without.session(false); }, boost::asio::detached);
  io_.poll();
  p = http_.next();
  ASSERT_NE(p, nullptr);
  p->response.headers["x-subject-token"] = "t";
  p->reply(201, kTokenBody);
  ASSERT_TRUE(got && got->ok());
  EXPECT_EQ((*got)->computeEndpoint, "");
}

TEST(KeystoneTimeTest, SecondsBetween) {
  EXPECT_EQ(secondsBetween("2026-11-02T10:00:00.000000Z", "2026-11-02T11:00:00.000000Z"), 3600);
  EXPECT_EQ(secondsBetween("2026-12-31T23:59:00Z", "2027-01-01T00:01:00Z"), 120);
  EXPECT_FALSE(secondsBetween("soon", "later"));
}

}  // namespace
}  // namespace okna::placement
