/* ovs_chassis_glue.h -- the C API the chassis reconciler's IDL thread uses, on top of
 * ovs_idl_glue.h: handles that monitor what the reconciler reads, the pieces of OVS's poll loop
 * (so that one thread can wait on two IDLs and a wake-up fd at once), and non-blocking
 * transactions made of primitive ops (ovn-controller style: start, then commit again on every
 * loop iteration until it is done). Includes no OVS header. Same threading rules as
 * ovs_idl_glue.h: every handle from one thread.
 */
#ifndef OKNA_OVSDB_OVS_CHASSIS_GLUE_H
#define OKNA_OVSDB_OVS_CHASSIS_GLUE_H

#include <stddef.h>

#include "ovs_idl_glue.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the poll loop of the calling thread ------------------------------------------------- */

void okna_ovs_idl_wait(okna_ovs_idl*);
void okna_sb_idl_wait(okna_sb_idl*);
/* Wakes the next okna_poll_block() when 'fd' is readable. */
void okna_poll_fd_wait(int fd);
/* Wakes the next okna_poll_block() after 'msec' milliseconds at the latest. */
void okna_poll_timer_wait(long long msec);
/* Blocks until one of the registered events (IDL sockets, reconnect timers, fds, timers). */
void okna_poll_block(void);

/* ---- Open_vSwitch: the chassis view ------------------------------------------------------ */

int okna_ovs_idl_has_ever_connected(const okna_ovs_idl*);
/* 1 once the Open_vSwitch root row exists in the replica. */
int okna_ovs_idl_has_root(okna_ovs_idl*);

typedef void (*okna_ovs_bridge_cb)(void* ctx, const char* bridge, const char* datapath_type);
typedef void (*okna_ovs_port_cb)(void* ctx, const char* bridge, const char* port);
/* Bridges of the root row's 'bridges' column (the ones ovs-vswitchd runs). */
void okna_ovs_idl_foreach_bridge(okna_ovs_idl*, okna_ovs_bridge_cb cb, void* ctx);
void okna_ovs_idl_foreach_bridge_port(okna_ovs_idl*, okna_ovs_port_cb cb, void* ctx);

typedef void (*okna_ovs_iface_status_cb)(void* ctx, const char* bridge, const char* port,
                                         const char* iface, int has_ofport, long long ofport,
                                         const char* error);
/* Every Interface of every bridge with what ovs-vswitchd made of it: its OpenFlow port (-1 when
 * it failed; none before it tried) and Interface.error ("" when none). */
void okna_ovs_idl_foreach_iface_status(okna_ovs_idl*, okna_ovs_iface_status_cb cb, void* ctx);

typedef enum okna_ovs_op_kind {
  OKNA_OVS_SET_EXTERNAL_ID,       /* a = key, b = value: partial map update (setkey) */
  OKNA_OVS_DEL_EXTERNAL_ID,       /* a = key: partial map update (delkey), skipped if absent */
  OKNA_OVS_ADD_BRIDGE,            /* a = bridge, b = datapath_type ("" = default): with its internal
                                     port, like ovs-vsctl add-br */
  OKNA_OVS_ADD_PORT,              /* a = bridge, b = port (a system interface) */
  OKNA_OVS_DEL_PORT,              /* a = bridge, b = port */
  OKNA_OVS_DEL_BRIDGE,            /* a = bridge (its ports go with it) */
  OKNA_OVS_ADD_IFACE_PORT,        /* a = bridge, b = port (a system interface), c = the Interface's
                                     external_ids as "k1=v1,k2=v2" (a metadata port: iface-id) */
  OKNA_OVS_SET_IFACE_EXTERNAL_ID, /* a = bridge, b = port/interface, c = "key=value" (setkey) */
  OKNA_OVS_SET_BRIDGE_DATAPATH_TYPE /* a = bridge, b = datapath_type (verified) */
} okna_ovs_op_kind;

typedef struct okna_ovs_op {
  okna_ovs_op_kind kind;
  const char* a;
  const char* b;
  const char* c;
} okna_ovs_op;

typedef enum okna_txn_status {
  OKNA_TXN_INCOMPLETE = 0, /* in flight: call okna_ovs_txn_commit again after the next run */
  OKNA_TXN_SUCCESS = 1,
  OKNA_TXN_UNCHANGED = 2, /* nothing to change */
  OKNA_TXN_TRY_AGAIN = 3, /* a verified column changed (a concurrent writer) or the connection
                             dropped: recompute from the replica and start again */
  OKNA_TXN_ERROR = 4      /* hard error, see okna_ovs_txn_error */
} okna_txn_status;

typedef struct okna_ovs_txn okna_ovs_txn;

/* Builds a transaction from 'ops' against the current replica and sends it. 'verify_*' add the
 * prerequisite that the column still has the value the ops were computed from. Returns NULL
 * when there is no root row, or an op names a bridge/port that is not in the replica (the caller
 * recomputes after the next change). */
okna_ovs_txn* okna_ovs_txn_start(okna_ovs_idl*, const okna_ovs_op* ops, size_t n_ops,
                                 int verify_external_ids, int verify_bridges, const char* comment);
/* Non-blocking; call after okna_ovs_idl_run() until it is not OKNA_TXN_INCOMPLETE. */
okna_txn_status okna_ovs_txn_commit(okna_ovs_txn*);
void okna_ovs_txn_wait(okna_ovs_txn*);
/* The error text of an OKNA_TXN_ERROR (valid until destroy). */
const char* okna_ovs_txn_error(const okna_ovs_txn*);
void okna_ovs_txn_destroy(okna_ovs_txn*);

/* ---- OVN_Southbound: the gateways bound to one chassis ----------------------------------- */

/* Conditional monitoring: Port_Binding rows of type "chassisredirect" only
 * {logical_port,type,chassis}, and the Chassis row named 'chassis_name' only {name}: a
 * binding's chassis is then non-empty exactly when it is bound to this chassis. Reads from any
 * cluster member (not only the RAFT leader), like ovn-controller. */
okna_sb_idl* okna_sb_idl_open_gateways(const char* remote, const char* chassis_name);
int okna_sb_idl_is_connected(const okna_sb_idl*);
/* As okna_ovs_idl_connection_error. */
const char* okna_sb_idl_connection_error(const okna_sb_idl*);
/* The conditions are set before the first connection, so the first monitor request carries them
 * (ovsdb-cs acks them without a monitor_cond_change): once this is true, the replica holds
 * exactly the rows they select. */
int okna_sb_idl_has_ever_connected(const okna_sb_idl*);

#ifdef __cplusplus
}
#endif

#endif /* OKNA_OVSDB_OVS_CHASSIS_GLUE_H */
