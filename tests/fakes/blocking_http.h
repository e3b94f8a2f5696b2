#pragma once
// A blocking libcurl call for test code (never used by the agent, whose HTTP is asynchronous).

#include <curl/curl.h>

#include <string>

namespace okna::testing {

struct BlockingResponse {
  long status = 0;  // 0: transport error
  std::string body;
};

inline BlockingResponse httpCall(const std::string& method, const std::string& url,
                                 const std::string& body = "", const std::string& contentType = "",
                                 const std::string& token = "", const std::string& caFile = "") {
  BlockingResponse r;
  CURL* c = curl_easy_init();
  curl_slist* headers = nullptr;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (!caFile.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, caFile.c_str());
  if (!body.empty() || method == "POST" || method == "PATCH") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  if (!contentType.empty())
    headers = curl_slist_append(headers, ("Content-Type: " + contentType).c_str());
  if (!token.empty())
    headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
  headers = curl_slist_append(headers, "Accept: application/json");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(
      c, CURLOPT_WRITEFUNCTION, +[](char* p, size_t s, size_t n, void* ud) {
        static_cast<std::string*>(ud)->append(p, s * n);
        return s * n;
      });
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  return r;
}

}  // namespace okna::testing
