#include "metadata/signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace okna::metadata {

std::string signInstanceId(std::string_view secret, std::string_view instanceId) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // An empty key is valid for HMAC (Neutron's default secret is ""); OpenSSL wants a non-null
  // pointer even then.
  static const unsigned char kEmpty = 0;
  const void* key = secret.empty() ? &kEmpty : static_cast<const void*>(secret.data());
  HMAC(EVP_sha256(), key, static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(instanceId.data()), instanceId.size(), digest,
       &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(static_cast<std::size_t>(length) * 2, '0');
  for (unsigned int i = 0; i < length; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0x0f];
  }
  return out;
}

}  // namespace okna::metadata
