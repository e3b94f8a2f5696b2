/* ovs_metadata_glue.h -- what the metadata service reads from and writes to OVSDB, on top of
 * ovs_chassis_glue.h (same rules: compiled as C, includes no OVS header, every handle from one
 * thread).
 *
 * The Southbound "chassis view" is one SB connection per agent that serves both the gateway
 * drain and the metadata service (the transport merges their monitor requests). It is
 * conditionally monitored, like ovn-controller with ovn-monitor-all=false, so that what the
 * agent receives grows with what this chassis hosts and not with the size of the cloud:
 *   Chassis, Chassis_Private   the row named after this chassis only
 *   SB_Global                  the one row (nb_cfg, echoed for Neutron's agent liveness)
 *   Port_Binding               type chassisredirect (gateway drain); with metadata on, also the
 *                              ports whose chassis is this chassis or whose additional_chassis
 *                              includes it, and every port of the datapaths hosting a VIF
 *                              bound here (metadata/sb_participant.h)
 *   Datapath_Binding           those datapaths
 * A reference to a row outside the replica reads as empty: a Port_Binding's chassis is non-empty
 * exactly when it is this chassis.
 */
#ifndef OKNA_OVSDB_OVS_METADATA_GLUE_H
#define OKNA_OVSDB_OVS_METADATA_GLUE_H

#include <stddef.h>

#include "ovs_chassis_glue.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Open_vSwitch: the metadata ports on the integration bridge --------------------------- */

/* Calls cb for every Interface of every Port of 'bridge' with the external_ids the metadata
 * service reads ("" when absent): iface-id, attached-mac and the agent's mark ('mark_key', e.g.
 * openkeel-node-agent). Looked up in the row's map (no copy of the others: on a hypervisor
 * every VM interface has half a dozen keys of ovn-controller and Nova). */
typedef void (*okna_ovs_iface_ids_cb)(void* ctx, const char* port, const char* iface_id,
                                      const char* attached_mac, const char* mark);
void okna_ovs_idl_foreach_iface_ids(okna_ovs_idl*, const char* bridge, const char* mark_key,
                                    okna_ovs_iface_ids_cb cb, void* ctx);

/* ---- OVN_Southbound: the chassis view ------------------------------------------------------ */

/* The Southbound IDL is opened by the transport (ovs_monitor_glue.h: okna_sb_idl_open_empty,
 * with this chassis's name), which sets the columns and conditions its participants ask for
 * (the metadata participant, metadata/sb_participant.h, asks for the ones above). */

/* The condition sequence number the replica has reached (see okna_sb_idl_set_condition). */
unsigned int okna_sb_idl_condition_seqno(const okna_sb_idl*);
/* 1 when the own Chassis row is in the replica; then writes its UUID (36 chars + NUL). */
int okna_sb_idl_own_chassis_uuid(okna_sb_idl*, char uuid[37]);

typedef struct okna_sb_port {
  const char* uuid;         /* the Port_Binding row */
  const char* logical_port; /* never NULL */
  const char* type;         /* "" for a VIF */
  const char* datapath;     /* Datapath_Binding UUID ("" when unset) */
  int on_chassis;           /* chassis is this chassis */
  int on_additional;        /* additional_chassis includes this chassis */
  const char* mac0;         /* mac[0], "" when none */
  const char* cidrs;        /* external_ids:neutron:cidrs, "" when absent */
  const char* device_id;    /* external_ids:neutron:device_id */
  const char* project_id;   /* external_ids:neutron:project_id */
  const char* device_owner; /* external_ids:neutron:device_owner */
} okna_sb_port;
typedef void (*okna_sb_port_view_cb)(void* ctx, const okna_sb_port* port);
void okna_sb_idl_foreach_port(okna_sb_idl*, okna_sb_port_view_cb cb, void* ctx);

/* name = external_ids:name of the Datapath_Binding ("" when absent). */
typedef void (*okna_sb_datapath_cb)(void* ctx, const char* uuid, const char* name);
void okna_sb_idl_foreach_datapath(okna_sb_idl*, okna_sb_datapath_cb cb, void* ctx);

/* SB_Global.nb_cfg, or -1 when the row is not in the replica. */
long long okna_sb_idl_nb_cfg(okna_sb_idl*);
/* 1 when the own Chassis_Private row is in the replica; calls cb for its external_ids. */
int okna_sb_idl_foreach_chassis_private_id(okna_sb_idl*, okna_ovsdb_kv_cb cb, void* ctx);

/* A non-blocking SB transaction that sets keys of the own Chassis_Private row's external_ids
 * and deletes others (partial map updates). 'kv' holds n_pairs key/value pairs, 'del' n_del
 * keys. NULL when the row is not there. */
typedef struct okna_sb_txn okna_sb_txn;
okna_sb_txn* okna_sb_txn_set_chassis_private_ids(okna_sb_idl*, const char* const* kv,
                                                 size_t n_pairs, const char* const* del,
                                                 size_t n_del);
okna_txn_status okna_sb_txn_commit(okna_sb_txn*);
void okna_sb_txn_wait(okna_sb_txn*);
const char* okna_sb_txn_error(const okna_sb_txn*);
void okna_sb_txn_destroy(okna_sb_txn*);

#ifdef __cplusplus
}
#endif

#endif /* OKNA_OVSDB_OVS_METADATA_GLUE_H */
