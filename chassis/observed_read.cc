#include "chassis/observed_read.h"

#include "ovsdb/ovs_chassis_glue.h"

namespace okna::ovsdb {

ObservedOvs readObserved(okna_ovs_idl* idl) {
  ObservedOvs o;
  o.hasRoot = okna_ovs_idl_has_root(idl) != 0;
  okna_ovs_idl_foreach_external_id(
      idl,
      [](void* ctx, const char* k, const char* v) {
        static_cast<ObservedOvs*>(ctx)->externalIds[k] = v;
      },
      &o);
  okna_ovs_idl_foreach_bridge(
      idl,
      [](void* ctx, const char* name, const char* datapathType) {
        static_cast<ObservedOvs*>(ctx)->bridges[name].datapathType = datapathType;
      },
      &o);
  okna_ovs_idl_foreach_bridge_port(
      idl,
      [](void* ctx, const char* bridge, const char* port) {
        static_cast<ObservedOvs*>(ctx)->bridges[bridge].ports.push_back(port);
      },
      &o);
  okna_ovs_idl_foreach_iface_status(
      idl,
      [](void* ctx, const char* bridge, const char* port, const char*, int hasOfport,
         long long ofport, const char* error) {
        auto& b = static_cast<ObservedOvs*>(ctx)->bridges[bridge];
        if (*error != '\0') {
          b.failedPorts[port] = error;
        } else if (hasOfport && ofport == -1) {
          b.failedPorts[port] = "ofport -1 (ovs-vswitchd could not add it)";
        } else if (!hasOfport) {
          b.pendingPorts.insert(port);
        }
      },
      &o);
  return o;
}

}  // namespace okna::ovsdb
