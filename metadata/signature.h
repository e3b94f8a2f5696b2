#pragma once
// The signature Neutron's metadata agent puts in X-Instance-ID-Signature and Nova checks
// (nova.api.metadata.handler._validate_shared_secret): HMAC-SHA256 of the instance id (UTF-8)
// keyed with the shared secret (UTF-8), as lowercase hex.

#include <string>
#include <string_view>

namespace okna::metadata {

/** Lowercase hex HMAC-SHA256 of `instanceId` keyed with `secret` (both taken as bytes). */
std::string signInstanceId(std::string_view secret, std::string_view instanceId);

}  // namespace okna::metadata
