#include "k8s/credentials.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace okna::k8s {

namespace {

core::Result<std::string> readFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::makeError(what + " " + path + ": cannot be read", errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trimWhitespace(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

core::Result<std::string> base64Decode(const std::string& in, const std::string& field) {
  std::string clean;
  for (char c : in)
    if (c != '\n' && c != '\r' && c != ' ') clean += c;
  if (clean.size() % 4 != 0) return core::makeError(field + ": not valid base64");
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) return core::makeError(field + ": not valid base64");
  size_t len = static_cast<size_t>(n);
  // EVP_DecodeBlock counts padding bytes as output; drop them.
  if (!clean.empty() && clean.back() == '=') --len;
  if (clean.size() > 1 && clean[clean.size() - 2] == '=') --len;
  out.resize(len);
  return out;
}

// kubeconfig paths are relative to the kubeconfig's own directory.
std::string resolve(const std::string& base, const std::string& p) {
  if (p.empty() || p.front() == '/') return p;
  return (std::filesystem::path(base).parent_path() / p).string();
}

const YAML::Node findNamed(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list)
    if (item["name"] && item["name"].as<std::string>() == name) return item;
  return YAML::Node();
}

std::string str(const YAML::Node& n, const char* key) {
  return n && n[key] && n[key].IsScalar() ? n[key].as<std::string>() : std::string();
}

}  // namespace

TokenSource TokenSource::literal(std::string token) {
  TokenSource t;
  t.token_ = std::move(token);
  return t;
}

TokenSource TokenSource::file(std::string path) {
  TokenSource t;
  t.path_ = std::move(path);
  return t;
}

std::string TokenSource::current() {
  if (path_.empty()) return token_;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return token_;  // keep the last good token
  const long long mtime =
      static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  if (mtime != cachedMtime_ || static_cast<long long>(st.st_size) != cachedSize_) {
    auto content = readFile(path_, "token file");
    if (content.ok()) {
      token_ = trimWhitespace(*content);
      cachedMtime_ = mtime;
      cachedSize_ = static_cast<long long>(st.st_size);
    }
  }
  return token_;
}

core::Result<ClusterConfig> inClusterConfig(const InClusterPaths& paths) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0')
    return core::makeError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
        "(outside a pod, pass --kubeconfig or set KUBECONFIG)");
  ClusterConfig c;
  c.source = "in-cluster";
  const std::string h(host);
  c.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  if (!std::filesystem::exists(paths.tokenFile))
    return core::makeError("in-cluster config: service account token " + paths.tokenFile +
                           " is missing");
  if (!std::filesystem::exists(paths.caFile))
    return core::makeError("in-cluster config: service account CA " + paths.caFile + " is missing");
  c.token = TokenSource::file(paths.tokenFile);
  c.tls.caFile = paths.caFile;
  return c;
}

core::Result<ClusterConfig> kubeconfigConfig(const std::string& path, const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return core::makeError("kubeconfig " + path + ": " + e.what());
  }
  auto bad = [&](const std::string& why) {
    return core::makeError("kubeconfig " + path + ": " + why);
  };
  const std::string ctxName = context.empty() ? str(root, "current-context") : context;
  if (ctxName.empty()) return bad("no current-context and no context given");
  const YAML::Node ctx = findNamed(root["contexts"], ctxName);
  if (!ctx) return bad("context \"" + ctxName + "\" not found");
  const std::string clusterName = str(ctx["context"], "cluster");
  const std::string userName = str(ctx["context"], "user");
  const YAML::Node cluster = findNamed(root["clusters"], clusterName)["cluster"];
  if (!cluster)
    return bad("cluster \"" + clusterName + "\" of context \"" + ctxName + "\" not found");

  ClusterConfig c;
  c.source = path;
  c.server = str(cluster, "server");
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  if (c.server.empty()) return bad("clusters[" + clusterName + "].cluster.server: missing");
  c.tls.caFile = resolve(path, str(cluster, "certificate-authority"));
  if (auto data = str(cluster, "certificate-authority-data"); !data.empty()) {
    auto pem =
        base64Decode(data, "clusters[" + clusterName + "].cluster.certificate-authority-data");
    if (!pem) return bad(pem.error().message);
    c.tls.caPem = *pem;
  }
  c.tls.insecureSkipVerify = str(cluster, "insecure-skip-tls-verify") == "true";

  if (!userName.empty()) {
    const YAML::Node user = findNamed(root["users"], userName)["user"];
    if (!user) return bad("user \"" + userName + "\" of context \"" + ctxName + "\" not found");
    if (auto token = str(user, "token"); !token.empty()) c.token = TokenSource::literal(token);
    if (auto file = str(user, "tokenFile"); !file.empty())
      c.token = TokenSource::file(resolve(path, file));
    c.tls.clientCertFile = resolve(path, str(user, "client-certificate"));
    c.tls.clientKeyFile = resolve(path, str(user, "client-key"));
    const std::string where = "users[" + userName + "].user.";
    if (auto data = str(user, "client-certificate-data"); !data.empty()) {
      auto pem = base64Decode(data, where + "client-certificate-data");
      if (!pem) return bad(pem.error().message);
      c.tls.clientCertPem = *pem;
    }
    if (auto data = str(user, "client-key-data"); !data.empty()) {
      auto pem = base64Decode(data, where + "client-key-data");
      if (!pem) return bad(pem.error().message);
      c.tls.clientKeyPem = *pem;
    }
    if (user["exec"] || user["auth-provider"])
      return bad("user \"" + userName +
                 "\": exec and auth-provider plugins are not supported; use a token");
  }
  return c;
}

}  // namespace okna::k8s
