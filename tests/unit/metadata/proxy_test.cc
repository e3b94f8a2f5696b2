#include "metadata/proxy.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include "metadata/config.h"

namespace okna::metadata {
namespace {

const InstancePort kPort{"port-1", "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f", "proj-9", ""};

NovaEndpoint endpoint() {
  NovaConfig n;
  n.host = "10.0.0.5";
  n.port = 8775;
  return makeNovaEndpoint(n);
}

TEST(NovaEndpointTest, UrlAndTls) {
  NovaConfig n;
  EXPECT_EQ(makeNovaEndpoint(n).baseUrl, "http://127.0.0.1:8775");
  n.host = "fd00::5";
  n.protocol = "https";
  n.port = 443;
  n.caFile = "/ca.pem";
  n.clientCertFile = "/c.pem";
  n.clientKeyFile = "/c.key";
  n.connectTimeout = std::chrono::milliseconds(300);
  n.timeout = std::chrono::milliseconds(4000);
  auto e = makeNovaEndpoint(n);
  EXPECT_EQ(e.baseUrl, "https://[fd00::5]:443");
  EXPECT_EQ(e.tls.caFile, "/ca.pem");
  EXPECT_FALSE(e.tls.insecureSkipVerify);
  EXPECT_EQ(e.tls.clientCertFile, "/c.pem");
  EXPECT_EQ(e.tls.clientKeyFile, "/c.key");
  EXPECT_EQ(e.connectTimeout, std::chrono::milliseconds(300));
  EXPECT_EQ(e.timeout, std::chrono::milliseconds(4000));
  // Neutron: with nova_metadata_insecure the CA is not used at all.
  n.insecure = true;
  e = makeNovaEndpoint(n);
  EXPECT_TRUE(e.tls.insecureSkipVerify);
  EXPECT_EQ(e.tls.caFile, "");
}

TEST(BuildNovaRequestTest, ExactlyNeutronsHeaders) {
  auto r = buildNovaRequest(endpoint(), "GET", "/openstack/latest/meta_data.json", "",
                            "192.168.0.12", kPort, "sig");
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.url, "http://10.0.0.5:8775/openstack/latest/meta_data.json");
  const std::map<std::string, std::string> expected{
      {"X-Forwarded-For", "192.168.0.12"},
      {"X-Instance-ID", "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f"},
      {"X-Tenant-ID", "proj-9"},
      {"X-Instance-ID-Signature", "sig"}};
  EXPECT_EQ(r.headers, expected);
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(r.connectTimeout, std::chrono::seconds(2));
  EXPECT_EQ(r.totalTimeout, std::chrono::seconds(8));
}

TEST(BuildNovaRequestTest, QueryKeptFragmentAndEmptyQueryDropped) {
  EXPECT_EQ(
      buildNovaRequest(endpoint(), "GET", "/latest/meta-data/?a=1&b=%20", "", "1.2.3.4", kPort, "s")
          .url,
      "http://10.0.0.5:8775/latest/meta-data/?a=1&b=%20");
  EXPECT_EQ(buildNovaRequest(endpoint(), "GET", "/latest?", "", "1.2.3.4", kPort, "s").url,
            "http://10.0.0.5:8775/latest");
  EXPECT_EQ(buildNovaRequest(endpoint(), "GET", "/latest#frag", "", "1.2.3.4", kPort, "s").url,
            "http://10.0.0.5:8775/latest");
  EXPECT_EQ(buildNovaRequest(endpoint(), "GET", "/", "", "1.2.3.4", kPort, "s").url,
            "http://10.0.0.5:8775/");
}

TEST(BuildNovaRequestTest, PostKeepsMethodAndBodyWithoutContentType) {
  std::string body(256, 'p');
  const char* data = body.data();
  auto r = buildNovaRequest(endpoint(), "POST", "/openstack/latest/password", std::move(body),
                            "fe80::f816:3eff:fe00:1", kPort, "s");
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.body.size(), 256u);
  // Moved, not copied (the small-string optimisation does not apply at 256 bytes).
  EXPECT_EQ(r.body.data(), data);
  // python-requests sends bytes without a Content-Type: the empty value suppresses curl's.
  ASSERT_EQ(r.headers.count("Content-Type"), 1u);
  EXPECT_EQ(r.headers.at("Content-Type"), "");
  EXPECT_EQ(r.headers.at("X-Forwarded-For"), "fe80::f816:3eff:fe00:1");
  auto put = buildNovaRequest(endpoint(), "PUT", "/x", "", "1.2.3.4", kPort, "s");
  EXPECT_EQ(put.method, "PUT");
  EXPECT_EQ(put.headers.count("Content-Type"), 1u);
  auto head = buildNovaRequest(endpoint(), "HEAD", "/x", "", "1.2.3.4", kPort, "s");
  EXPECT_EQ(head.headers.count("Content-Type"), 0u);
}

TEST(OriginFormTest, Targets) {
  EXPECT_TRUE(isOriginForm("/"));
  EXPECT_TRUE(isOriginForm("/openstack/latest/meta_data.json?x=1"));
  EXPECT_FALSE(isOriginForm(""));
  EXPECT_FALSE(isOriginForm("*"));
  EXPECT_FALSE(isOriginForm("http://169.254.169.254/latest"));
  EXPECT_FALSE(isOriginForm("169.254.169.254:80"));
  EXPECT_FALSE(isOriginForm("/a b"));
  EXPECT_FALSE(isOriginForm(std::string_view("/a\0b", 4)));
}

core::HttpResponse nova(long status, std::string body, std::string contentType = "") {
  core::HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  if (!contentType.empty()) r.headers["content-type"] = contentType;
  return r;
}

TEST(MapNovaResponseTest, Ok200PassesTypeAndBody) {
  auto r = mapNovaResponse(nova(200, R"({"uuid": "x"})", "application/json"));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.contentType, "application/json");
  EXPECT_EQ(r.body, R"({"uuid": "x"})");
  EXPECT_EQ(r.failure, NovaFailure::None);
  EXPECT_EQ(r.warning, "");
}

TEST(MapNovaResponseTest, Ok200WithoutContentTypeIs500AsInNeutron) {
  auto r = mapNovaResponse(nova(200, "x"));
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(r.failure, NovaFailure::Status);
}

struct StatusCase {
  long nova;
  unsigned expected;
  NovaFailure failure;
  const char* warningPart;  // "" = no warning
  const char* bodyPart;
};

class MapStatusTest : public ::testing::TestWithParam<StatusCase> {};

TEST_P(MapStatusTest, AsNeutron) {
  const auto& c = GetParam();
  auto r = mapNovaResponse(nova(c.nova, "nova's own body", "text/html"));
  EXPECT_EQ(r.status, c.expected) << c.nova;
  EXPECT_EQ(r.failure, c.failure) << c.nova;
  EXPECT_EQ(r.contentType, "text/plain; charset=UTF-8");
  // Neutron answers with its own page, never Nova's body.
  EXPECT_EQ(r.body.find("nova's own body"), std::string::npos);
  EXPECT_NE(r.body.find(c.bodyPart), std::string::npos) << r.body;
  if (std::string(c.warningPart).empty()) {
    EXPECT_EQ(r.warning, "") << c.nova;
  } else {
    EXPECT_NE(r.warning.find(c.warningPart), std::string::npos) << r.warning;
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, MapStatusTest,
    ::testing::Values(
        StatusCase{400, 400, NovaFailure::None, "", "400 Bad Request\n\nThe server could not"},
        StatusCase{403, 403, NovaFailure::Status, "usually occurs when shared secrets do not match",
                   "403 Forbidden\n\nAccess was denied to this resource."},
        StatusCase{404, 404, NovaFailure::None, "", "404 Not Found\n\nThe resource could not"},
        StatusCase{409, 409, NovaFailure::None, "", "409 Conflict"},
        StatusCase{500, 500, NovaFailure::Status,
                   "Remote metadata server experienced an internal server error.",
                   "Remote metadata server experienced an internal server error."},
        StatusCase{418, 500, NovaFailure::Status, "Unexpected response code: 418",
                   "An unknown error has occurred. Please try your request again."},
        StatusCase{201, 500, NovaFailure::Status, "Unexpected response code: 201", "500"},
        StatusCase{302, 500, NovaFailure::Status, "Unexpected response code: 302", "500"},
        StatusCase{401, 500, NovaFailure::Status, "Unexpected response code: 401", "500"},
        StatusCase{501, 500, NovaFailure::Status, "Unexpected response code: 501", "500"}));

TEST(MapNovaResponseTest, Ok200KeepsNovasContentTypeExactly) {
  // webob adds "; charset=UTF-8" to a text/* type Neutron sets; we pass on what Nova sent.
  for (const std::string type : {"text/plain", "text/html; charset=ISO-8859-1", "application/json",
                                 "application/octet-stream"}) {
    auto r = mapNovaResponse(nova(200, "body", type));
    EXPECT_EQ(r.contentType, type);
  }
}

TEST(MapNovaResponseTest, Nova502503504PassThroughWithNovasBodyAndType) {
  // Neutron master passes these statuses on (Zed answered 500); the body and Content-Type are
  // Nova's, exactly.
  for (const long status : {502L, 503L, 504L}) {
    auto r = mapNovaResponse(nova(status, "<html>nova says wait</html>", "text/html"));
    EXPECT_EQ(r.status, static_cast<unsigned>(status));
    EXPECT_EQ(r.contentType, "text/html");
    EXPECT_EQ(r.body, "<html>nova says wait</html>");
    EXPECT_EQ(r.failure, NovaFailure::Status);
    EXPECT_NE(r.warning.find("answered " + std::to_string(status)), std::string::npos);
    // No Content-Type from Nova: Neutron's own page for the status.
    auto bare = mapNovaResponse(nova(status, "x"));
    EXPECT_EQ(bare.status, static_cast<unsigned>(status));
    EXPECT_EQ(bare.contentType, "text/plain; charset=UTF-8");
    EXPECT_EQ(bare.body.rfind(std::to_string(status) + " ", 0), 0U) << bare.body;
  }
}

TEST(MapNovaResponseTest, TransportFailures) {
  // Nova unreachable: 503 with Neutron master's text (Zed: 500).
  auto refused = mapNovaResponse(core::makeError("Failed to connect", CURLE_COULDNT_CONNECT));
  EXPECT_EQ(refused.status, 503u);
  EXPECT_EQ(refused.failure, NovaFailure::Connect);
  EXPECT_NE(refused.warning.find("Failed to connect"), std::string::npos);
  EXPECT_NE(refused.body.find("503 Service Unavailable\n\nThe remote metadata server is "
                              "temporarily unavailable. Please try again later."),
            std::string::npos)
      << refused.body;

  auto resolve = mapNovaResponse(core::makeError("no such host", CURLE_COULDNT_RESOLVE_HOST));
  EXPECT_EQ(resolve.status, 503u);
  EXPECT_EQ(resolve.failure, NovaFailure::Connect);

  auto tls = mapNovaResponse(core::makeError("SSL connect error", CURLE_SSL_CONNECT_ERROR));
  EXPECT_EQ(tls.status, 503u);
  EXPECT_EQ(tls.failure, NovaFailure::Connect);

  auto slow = mapNovaResponse(core::makeError(
      "GET http://x: Operation timed out after 8001 milliseconds with 0 bytes received",
      CURLE_OPERATION_TIMEDOUT));
  EXPECT_EQ(slow.status, 504u);
  EXPECT_EQ(slow.failure, NovaFailure::Timeout);

  auto connectSlow = mapNovaResponse(core::makeError(
      "GET http://x: Connection timed out after 2001 milliseconds", CURLE_OPERATION_TIMEDOUT));
  EXPECT_EQ(connectSlow.status, 503u) << "no connection: unreachable, as requests' ConnectTimeout";
  EXPECT_EQ(connectSlow.failure, NovaFailure::Connect);

  auto reset = mapNovaResponse(core::makeError("Recv failure", CURLE_RECV_ERROR));
  EXPECT_EQ(reset.status, 503u);
  EXPECT_EQ(reset.failure, NovaFailure::Transport);
}

TEST(ErrorResponseTest, WebobPlainText) {
  auto r = errorResponse(404);
  EXPECT_EQ(r.body, "404 Not Found\n\nThe resource could not be found.\n\n   ");
  EXPECT_EQ(r.contentType, "text/plain; charset=UTF-8");
  EXPECT_EQ(errorResponse(413).status, 413u);
  EXPECT_EQ(errorResponse(431).status, 431u);
}

TEST(LookupFailureMessageTest, NeutronsTexts) {
  LookupResult none;
  EXPECT_EQ(lookupFailureMessage("net-1", "10.0.0.7", none),
            "No port found in network net-1 with IP address 10.0.0.7");
  LookupResult several;
  several.matches = 2;
  several.portUuids = "u1, u2";
  EXPECT_EQ(lookupFailureMessage("net-1", "10.0.0.7", several),
            "More than one port found in network net-1 with IP address 10.0.0.7. Please run the "
            "neutron-ovn-db-sync-util script as there seems to be inconsistent data between "
            "Neutron and OVN databases. OVN Port uuids: u1, u2");
}

}  // namespace
}  // namespace okna::metadata
