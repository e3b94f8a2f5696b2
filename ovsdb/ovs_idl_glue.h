/* ovs_idl_glue.h -- narrow C API over Open vSwitch's C IDL (libopenvswitch).
 *
 * The implementation (ovs_idl_glue.c) is compiled as C and is the only code that includes OVS
 * headers; this header includes none, so C++ can use it under the project's strict warnings.
 *
 * Threading: libopenvswitch's poll loop, logging and fatal-signal handling are process-global
 * and the poll loop is per thread. Use one handle from one thread at a time (a dedicated OVSDB
 * thread in the agent). Every call that waits runs the IDL's own loop (ovsdb_idl_run /
 * ovsdb_idl_wait / poll_block) and never blocks longer than its timeout.
 */
#ifndef OKNA_OVSDB_OVS_IDL_GLUE_H
#define OKNA_OVSDB_OVS_IDL_GLUE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum okna_ovsdb_status {
  OKNA_OVSDB_OK = 0,
  OKNA_OVSDB_TIMEOUT = 1,   /* not connected / no initial contents / commit not done in time */
  OKNA_OVSDB_NOT_FOUND = 2, /* e.g. no Open_vSwitch root row */
  OKNA_OVSDB_ERROR = 3,     /* hard transaction error (see okna_*_last_error) */
  OKNA_OVSDB_INVALID = 4    /* bad argument */
} okna_ovsdb_status;

const char* okna_ovsdb_status_str(okna_ovsdb_status);

/* Process-wide. Log level of libopenvswitch's own logging on stderr/syslog/file:
 * 0 = off, 1 = emer, 2 = err, 3 = warn, 4 = info, 5 = dbg. Default in OVS: info on console. */
void okna_ovsdb_set_log_level(int level);

/* Process-wide: libopenvswitch's log no longer goes to the console or syslog but to a pipe whose
 * read end (O_CLOEXEC) is returned, one line per message: "LEVEL|MODULE|MESSAGE" (LEVEL: EMER,
 * ERR, WARN, INFO, DBG), at most `level` (as okna_ovsdb_set_log_level). -1 (errno) on error.
 * Call once. */
int okna_ovsdb_log_to_pipe(int level);

/* Logs `message` through vlog at `level` (module okna_glue): for tests of the routing. */
void okna_ovsdb_vlog(int level, const char* message);

/* Process-wide: key, certificate and CA certificate for "ssl:" remotes (PEM file paths).
 * Any argument may be NULL to leave it unchanged. */
void okna_ovsdb_set_ssl_files(const char* private_key, const char* certificate,
                              const char* ca_cert);

/* ---- Open_vSwitch database (vswitch.ovsschema) ------------------------------------------- */

/* Monitors only Open_vSwitch.external_ids (where system-id, hostname, ovn-* settings live). */
typedef struct okna_ovs_idl okna_ovs_idl;

/* Never NULL for a non-NULL remote ("unix:/path", "tcp:ip:port", "ssl:ip:port"); connects
 * (and reconnects forever, with backoff) in the background of okna_ovs_idl_* calls. */
okna_ovs_idl* okna_ovs_idl_open(const char* remote);
void okna_ovs_idl_close(okna_ovs_idl*);

/* Runs the IDL loop until the initial contents arrived (true once per connection history). */
okna_ovsdb_status okna_ovs_idl_wait_synced(okna_ovs_idl*, int timeout_ms);

/* Runs the IDL loop once without blocking (processes pending updates). */
void okna_ovs_idl_run(okna_ovs_idl*);

/* Change sequence number of the local replica (changes whenever a monitored row changes). */
unsigned int okna_ovs_idl_seqno(const okna_ovs_idl*);
/* Runs the IDL loop (blocking in poll) until the seqno differs from 'seqno' or timeout. */
okna_ovsdb_status okna_ovs_idl_wait_change(okna_ovs_idl*, unsigned int seqno, int timeout_ms);
int okna_ovs_idl_is_connected(const okna_ovs_idl*);
/* Why the IDL's session last failed to connect or dropped ("" when it did not), e.g.
 * "Protocol error" for a TLS handshake the peer or the CA refused. Static storage. */
const char* okna_ovs_idl_connection_error(const okna_ovs_idl*);

typedef void (*okna_ovsdb_kv_cb)(void* ctx, const char* key, const char* value);

/* Calls cb for each Open_vSwitch.external_ids entry of the local replica, sorted by key.
 * Returns NOT_FOUND if there is no Open_vSwitch row (yet). */
okna_ovsdb_status okna_ovs_idl_foreach_external_id(okna_ovs_idl*, okna_ovsdb_kv_cb cb, void* ctx);

/* Sets / deletes ONE key of Open_vSwitch.external_ids with a partial map update
 * (vsrec_open_vswitch_update_external_ids_setkey/_delkey): other keys, including ones written
 * concurrently by other clients, are never rewritten. Commits, retrying on TXN_TRY_AGAIN after
 * the replica changes, until success, hard error or timeout. Deleting an absent key is OK. */
okna_ovsdb_status okna_ovs_idl_set_external_id(okna_ovs_idl*, const char* key, const char* value,
                                               int timeout_ms);
okna_ovsdb_status okna_ovs_idl_delete_external_id(okna_ovs_idl*, const char* key, int timeout_ms);

/* Last transaction/connection error text ("" if none); valid until the next call. */
const char* okna_ovs_idl_last_error(const okna_ovs_idl*);

/* ---- OVN_Southbound database (ovn-sb.ovsschema) ------------------------------------------ */

/* Monitors Chassis{name,hostname} and Port_Binding{logical_port,type,chassis} only. */
typedef struct okna_sb_idl okna_sb_idl;

okna_sb_idl* okna_sb_idl_open(const char* remote);
void okna_sb_idl_close(okna_sb_idl*);
okna_ovsdb_status okna_sb_idl_wait_synced(okna_sb_idl*, int timeout_ms);
void okna_sb_idl_run(okna_sb_idl*);
unsigned int okna_sb_idl_seqno(const okna_sb_idl*);
okna_ovsdb_status okna_sb_idl_wait_change(okna_sb_idl*, unsigned int seqno, int timeout_ms);

typedef void (*okna_sb_chassis_cb)(void* ctx, const char* name, const char* hostname);
/* chassis_name is "" when Port_Binding.chassis is empty. */
typedef void (*okna_sb_port_binding_cb)(void* ctx, const char* logical_port, const char* type,
                                        const char* chassis_name);

void okna_sb_idl_foreach_chassis(okna_sb_idl*, okna_sb_chassis_cb cb, void* ctx);
void okna_sb_idl_foreach_port_binding(okna_sb_idl*, okna_sb_port_binding_cb cb, void* ctx);

#ifdef __cplusplus
}
#endif

#endif /* OKNA_OVSDB_OVS_IDL_GLUE_H */
