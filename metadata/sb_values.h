#pragma once
// The Southbound is tenant input. A project member sets its port's device_id (any string of up
// to 255 characters, policy update_port:device_id), project-scoped names and addresses through
// Neutron; Neutron copies them into the Logical_Switch_Port, ovn-northd into the Port_Binding.
// A device_id carrying "\r\n" once went verbatim into X-Instance-ID, split the request to Nova
// and handed one VM another project's metadata. So every value the metadata service takes from
// a Port_Binding is checked here, where it enters the agent (the IDL thread's read of the
// chassis view), and a port with a bad value is kept in the view (its VM is still bound here)
// but marked: it is never served (404) and the lookup names it and why.

#include <string>
#include <string_view>

#include "metadata/metadata_ports.h"

namespace okna::ovsdb {

/** A canonical-form UUID (8-4-4-4-12 hex digits, either case): what Nova issues as instance id. */
bool isUuid(std::string_view s);

/** Keystone's project ids (32 hex digits; LDAP-backed or federated ones differ): 1 to 255 RFC
 *  9110 token characters, so nothing that could end or extend a header. */
bool isProjectId(std::string_view s);

/** Why the metadata service must not serve `port` ("" when it may): a value with a control
 *  character, a byte outside printable ASCII, or over its length limit anywhere; for a VM port
 *  (type "" or "external") with a device_id, a device_id that is not a UUID or a project id
 *  that is not a token. An empty device_id is not a problem here: such a port belongs to no
 *  instance, and the proxy answers it 404 itself, as Neutron does. */
std::string sbPortProblem(const SbPort& port);

/** Whether a network id (from Datapath_Binding external_ids:name) may name host objects:
 *  ovnmeta-<id> (a file under /run/netns) and tap<id[:10]>0/1. 1 to 64 of [A-Za-z0-9_-]:
 *  Neutron's are UUIDs; never "..", "/" or a control character. */
bool isSafeNetworkId(std::string_view id);

}  // namespace okna::ovsdb
