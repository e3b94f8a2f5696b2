#pragma once
// The cluster the tests' API clients point at when every request goes to a FakeHttpClient
// (Events from the reconcilers): never dialled, only named in the requests.

#include "k8s/credentials.h"

namespace okna::testing {

inline k8s::ClusterConfig fakeCluster() {
  k8s::ClusterConfig c;
  c.server = "https://api:6443";
  c.token = k8s::TokenSource::literal("tok");
  return c;
}

}  // namespace okna::testing
