#pragma once
// Where the API server is and how to authenticate to it: in-cluster (service account) or a
// kubeconfig for development. Tokens are read from files and re-read when the file changes
// (projected service account tokens rotate hourly); they are never logged.

#include <ctime>
#include <string>

#include "core/http_client.h"
#include "core/result.h"

namespace okna::k8s {

/** A bearer token from a literal or a file, re-read when the file's mtime or size changes. */
class TokenSource {
 public:
  TokenSource() = default;
  static TokenSource literal(std::string token);
  static TokenSource file(std::string path);

  /** The current token ("" when there is none); re-reads the file if it changed. */
  std::string current();
  /** Forget the cached token, so the next current() reads the file (after a 401). */
  void invalidate() { cachedMtime_ = -1; }
  bool empty() const { return token_.empty() && path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string token_;
  std::string path_;
  long long cachedMtime_ = -1;
  long long cachedSize_ = -1;
};

struct ClusterConfig {
  // https://host:port, no trailing slash.
  std::string server;
  core::TlsOptions tls;
  TokenSource token;
  // Where the config came from, for messages: "in-cluster" or the kubeconfig path.
  std::string source;
};

struct InClusterPaths {
  std::string tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string caFile = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
};

/** From KUBERNETES_SERVICE_HOST/PORT and the service account files. */
core::Result<ClusterConfig> inClusterConfig(const InClusterPaths& paths = {});

/** From a kubeconfig file; `context` empty means current-context. */
core::Result<ClusterConfig> kubeconfigConfig(const std::string& path,
                                             const std::string& context = "");

}  // namespace okna::k8s
