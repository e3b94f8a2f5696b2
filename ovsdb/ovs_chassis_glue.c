/* ovs_chassis_glue.c -- see ovs_chassis_glue.h. Compiled as C. */

#include <config.h> /* must come first in every translation unit that includes OVS headers */

#include "ovs_chassis_glue.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "okna-vswitch-idl.h"
#include "openvswitch/poll-loop.h"
#include "ovn-sb-idl.h"
#include "ovs_idl_glue_private.h"
#include "ovsdb-idl.h"
#include "smap.h"
#include "util.h"

/* ---- poll loop ----------------------------------------------------------------------------- */

void okna_ovs_idl_wait(okna_ovs_idl* h) {
  if (h) {
    ovsdb_idl_wait(h->idl);
  }
}

void okna_sb_idl_wait(okna_sb_idl* h) {
  if (h) {
    ovsdb_idl_wait(h->idl);
  }
}

void okna_poll_fd_wait(int fd) {
  poll_fd_wait(fd, POLLIN);
}

void okna_poll_timer_wait(long long msec) {
  poll_timer_wait(msec < 0 ? 0 : msec);
}

void okna_poll_block(void) {
  poll_block();
}

/* ---- Open_vSwitch -------------------------------------------------------------------------- */

int okna_ovs_idl_has_ever_connected(const okna_ovs_idl* h) {
  return h && ovsdb_idl_has_ever_connected(h->idl);
}

int okna_ovs_idl_has_root(okna_ovs_idl* h) {
  return h && vsrec_open_vswitch_first(h->idl) != NULL;
}

void okna_ovs_idl_foreach_bridge(okna_ovs_idl* h, okna_ovs_bridge_cb cb, void* ctx) {
  const struct vsrec_open_vswitch* ovs = h ? vsrec_open_vswitch_first(h->idl) : NULL;
  if (!ovs || !cb) {
    return;
  }
  for (size_t i = 0; i < ovs->n_bridges; i++) {
    const struct vsrec_bridge* br = ovs->bridges[i];
    cb(ctx, br->name, br->datapath_type ? br->datapath_type : "");
  }
}

void okna_ovs_idl_foreach_bridge_port(okna_ovs_idl* h, okna_ovs_port_cb cb, void* ctx) {
  const struct vsrec_open_vswitch* ovs = h ? vsrec_open_vswitch_first(h->idl) : NULL;
  if (!ovs || !cb) {
    return;
  }
  for (size_t i = 0; i < ovs->n_bridges; i++) {
    const struct vsrec_bridge* br = ovs->bridges[i];
    for (size_t j = 0; j < br->n_ports; j++) {
      cb(ctx, br->name, br->ports[j]->name);
    }
  }
}

void okna_ovs_idl_foreach_iface_status(okna_ovs_idl* h, okna_ovs_iface_status_cb cb, void* ctx) {
  const struct vsrec_open_vswitch* ovs = h ? vsrec_open_vswitch_first(h->idl) : NULL;
  if (!ovs || !cb) {
    return;
  }
  for (size_t i = 0; i < ovs->n_bridges; i++) {
    const struct vsrec_bridge* br = ovs->bridges[i];
    for (size_t j = 0; j < br->n_ports; j++) {
      const struct vsrec_port* port = br->ports[j];
      for (size_t k = 0; k < port->n_interfaces; k++) {
        const struct vsrec_interface* iface = port->interfaces[k];
        cb(ctx, br->name, port->name, iface->name, iface->n_ofport > 0,
           iface->n_ofport > 0 ? iface->ofport[0] : 0, iface->error ? iface->error : "");
      }
    }
  }
}

static const struct vsrec_bridge* find_bridge(const struct vsrec_open_vswitch* ovs,
                                              const char* name) {
  for (size_t i = 0; i < ovs->n_bridges; i++) {
    if (!strcmp(ovs->bridges[i]->name, name)) {
      return ovs->bridges[i];
    }
  }
  return NULL;
}

static const struct vsrec_port* find_port(const struct vsrec_bridge* br, const char* name) {
  for (size_t i = 0; i < br->n_ports; i++) {
    if (!strcmp(br->ports[i]->name, name)) {
      return br->ports[i];
    }
  }
  return NULL;
}

/* Parses "k1=v1,k2=v2" (NULL or "" = empty) into 'map'. */
static void parse_kv_list(const char* s, struct smap* map) {
  if (!s || !*s) {
    return;
  }
  char* copy = xstrdup(s);
  char* save = NULL;
  for (char* item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char* eq = strchr(item, '=');
    if (eq) {
      *eq = '\0';
      smap_replace(map, item, eq + 1);
    }
  }
  free(copy);
}

/* A Port with one Interface of the same name, as ovs-vsctl add-port / add-br create them. */
static struct vsrec_port* insert_port_ids(struct ovsdb_idl_txn* txn, const char* name,
                                          const char* iface_type, const char* iface_ids) {
  struct vsrec_interface* iface = vsrec_interface_insert(txn);
  vsrec_interface_set_name(iface, name);
  if (iface_type) {
    vsrec_interface_set_type(iface, iface_type);
  }
  if (iface_ids && *iface_ids) {
    struct smap ids = SMAP_INITIALIZER(&ids);
    parse_kv_list(iface_ids, &ids);
    vsrec_interface_set_external_ids(iface, &ids);
    smap_destroy(&ids);
  }
  struct vsrec_port* port = vsrec_port_insert(txn);
  vsrec_port_set_name(port, name);
  vsrec_port_set_interfaces(port, &iface, 1);
  return port;
}

static struct vsrec_port* insert_port(struct ovsdb_idl_txn* txn, const char* name,
                                      const char* iface_type) {
  return insert_port_ids(txn, name, iface_type, NULL);
}

struct okna_ovs_txn {
  struct ovsdb_idl_txn* txn;
  char error[256];
};

/* New bridges of this transaction: their ports are set once, at the end. */
struct new_bridge {
  const char* name;
  struct vsrec_bridge* row;
  struct vsrec_port** ports;
  size_t n_ports;
};

static struct new_bridge* find_new_bridge(struct new_bridge* nb, size_t n, const char* name) {
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(nb[i].name, name)) {
      return &nb[i];
    }
  }
  return NULL;
}

okna_ovs_txn* okna_ovs_txn_start(okna_ovs_idl* h, const okna_ovs_op* ops, size_t n_ops,
                                 int verify_external_ids, int verify_bridges, const char* comment) {
  const struct vsrec_open_vswitch* ovs = h ? vsrec_open_vswitch_first(h->idl) : NULL;
  if (!ovs) {
    return NULL;
  }
  struct ovsdb_idl_txn* txn = ovsdb_idl_txn_create(h->idl);
  if (comment) {
    ovsdb_idl_txn_add_comment(txn, "%s", comment);
  }
  if (verify_external_ids) {
    vsrec_open_vswitch_verify_external_ids(ovs);
  }
  if (verify_bridges) {
    vsrec_open_vswitch_verify_bridges(ovs);
  }
  struct new_bridge* nb = xcalloc(n_ops ? n_ops : 1, sizeof *nb);
  size_t n_nb = 0;
  int ok = 1;
  for (size_t i = 0; i < n_ops && ok; i++) {
    const okna_ovs_op* op = &ops[i];
    switch (op->kind) {
      case OKNA_OVS_SET_EXTERNAL_ID:
        vsrec_open_vswitch_update_external_ids_setkey(ovs, op->a, op->b);
        break;
      case OKNA_OVS_DEL_EXTERNAL_ID:
        /* The IDL drops (and warns about) a delkey the replica cannot apply. */
        if (smap_get(&ovs->external_ids, op->a)) {
          vsrec_open_vswitch_update_external_ids_delkey(ovs, op->a);
        }
        break;
      case OKNA_OVS_ADD_BRIDGE: {
        struct new_bridge* b = &nb[n_nb++];
        b->name = op->a;
        b->row = vsrec_bridge_insert(txn);
        vsrec_bridge_set_name(b->row, op->a);
        if (op->b && *op->b) {
          vsrec_bridge_set_datapath_type(b->row, op->b);
        }
        b->ports = xcalloc(n_ops + 1, sizeof *b->ports);
        b->ports[b->n_ports++] = insert_port(txn, op->a, "internal");
        vsrec_open_vswitch_update_bridges_addvalue(ovs, b->row);
        break;
      }
      case OKNA_OVS_ADD_PORT: {
        struct new_bridge* b = find_new_bridge(nb, n_nb, op->a);
        if (b) {
          b->ports[b->n_ports++] = insert_port(txn, op->b, NULL);
          break;
        }
        const struct vsrec_bridge* br = find_bridge(ovs, op->a);
        if (!br) {
          ok = 0;
          break;
        }
        vsrec_bridge_verify_ports(br);
        vsrec_bridge_update_ports_addvalue(br, insert_port(txn, op->b, NULL));
        break;
      }
      case OKNA_OVS_DEL_PORT: {
        const struct vsrec_bridge* br = find_bridge(ovs, op->a);
        const struct vsrec_port* port = br ? find_port(br, op->b) : NULL;
        if (port) {
          vsrec_bridge_verify_ports(br);
          vsrec_bridge_update_ports_delvalue(br, port);
        }
        break;
      }
      case OKNA_OVS_ADD_IFACE_PORT: {
        const struct vsrec_bridge* br = find_bridge(ovs, op->a);
        if (!br) {
          ok = 0;
          break;
        }
        vsrec_bridge_verify_ports(br);
        vsrec_bridge_update_ports_addvalue(br, insert_port_ids(txn, op->b, NULL, op->c));
        break;
      }
      case OKNA_OVS_SET_IFACE_EXTERNAL_ID: {
        const struct vsrec_bridge* br = find_bridge(ovs, op->a);
        const struct vsrec_port* port = br ? find_port(br, op->b) : NULL;
        if (!port || !port->n_interfaces) {
          ok = 0;
          break;
        }
        struct smap kv = SMAP_INITIALIZER(&kv);
        parse_kv_list(op->c, &kv);
        struct smap_node* node;
        SMAP_FOR_EACH(node, &kv) {
          vsrec_interface_update_external_ids_setkey(port->interfaces[0], node->key, node->value);
        }
        smap_destroy(&kv);
        break;
      }
      case OKNA_OVS_SET_BRIDGE_DATAPATH_TYPE: {
        const struct vsrec_bridge* br = find_bridge(ovs, op->a);
        if (!br) {
          ok = 0;
          break;
        }
        vsrec_bridge_verify_datapath_type(br);
        vsrec_bridge_set_datapath_type(br, op->b);
        break;
      }
      case OKNA_OVS_DEL_BRIDGE: {
        /* Bridge, Port and Interface are not root tables: the server garbage-collects them. */
        const struct vsrec_bridge* br = find_bridge(ovs, op->a);
        if (br) {
          vsrec_open_vswitch_update_bridges_delvalue(ovs, br);
        }
        break;
      }
    }
  }
  for (size_t i = 0; i < n_nb; i++) {
    if (ok) {
      vsrec_bridge_set_ports(nb[i].row, nb[i].ports, nb[i].n_ports);
    }
    free(nb[i].ports);
  }
  free(nb);
  if (!ok) {
    ovsdb_idl_txn_abort(txn);
    ovsdb_idl_txn_destroy(txn);
    return NULL;
  }
  okna_ovs_txn* t = xzalloc(sizeof *t);
  t->txn = txn;
  return t;
}

/* Shared by every transaction of the glue (ovs_idl_glue_private.h). */
okna_txn_status okna_glue_txn_commit(struct ovsdb_idl_txn* txn, char* error, size_t error_size) {
  enum ovsdb_idl_txn_status status = ovsdb_idl_txn_commit(txn);
  switch (status) {
    case TXN_INCOMPLETE:
      return OKNA_TXN_INCOMPLETE;
    case TXN_SUCCESS:
      return OKNA_TXN_SUCCESS;
    case TXN_UNCHANGED:
      return OKNA_TXN_UNCHANGED;
    case TXN_TRY_AGAIN:
      return OKNA_TXN_TRY_AGAIN;
    case TXN_UNCOMMITTED:
    case TXN_ABORTED:
    case TXN_NOT_LOCKED:
    case TXN_ERROR:
    default: {
      const char* detail = ovsdb_idl_txn_get_error(txn);
      snprintf(error, error_size, "%s%s%s", ovsdb_idl_txn_status_to_string(status),
               detail && *detail ? ": " : "", detail ? detail : "");
      return OKNA_TXN_ERROR;
    }
  }
}

okna_txn_status okna_ovs_txn_commit(okna_ovs_txn* t) {
  return okna_glue_txn_commit(t->txn, t->error, sizeof t->error);
}

void okna_ovs_txn_wait(okna_ovs_txn* t) {
  if (t) {
    ovsdb_idl_txn_wait(t->txn);
  }
}

const char* okna_ovs_txn_error(const okna_ovs_txn* t) {
  return t ? t->error : "";
}

void okna_ovs_txn_destroy(okna_ovs_txn* t) {
  if (t) {
    ovsdb_idl_txn_destroy(t->txn);
    free(t);
  }
}

/* ---- OVN_Southbound ------------------------------------------------------------------------ */

okna_sb_idl* okna_sb_idl_open_gateways(const char* remote, const char* chassis_name) {
  if (!remote) {
    return NULL;
  }
  okna_sb_idl* h = xzalloc(sizeof *h);
  okna_glue_leave_large_maps_unparsed();
  h->idl = ovsdb_idl_create(remote, &sbrec_idl_class, false, true);
  ovsdb_idl_set_leader_only(h->idl, false);
  ovsdb_idl_add_column(h->idl, &sbrec_chassis_col_name);
  ovsdb_idl_add_column(h->idl, &sbrec_port_binding_col_logical_port);
  ovsdb_idl_add_column(h->idl, &sbrec_port_binding_col_type);
  ovsdb_idl_add_column(h->idl, &sbrec_port_binding_col_chassis);

  struct ovsdb_idl_condition chassis = OVSDB_IDL_CONDITION_INIT(&chassis);
  sbrec_chassis_add_clause_name(&chassis, OVSDB_F_EQ, chassis_name ? chassis_name : "");
  sbrec_chassis_set_condition(h->idl, &chassis);
  ovsdb_idl_condition_destroy(&chassis);

  struct ovsdb_idl_condition pbs = OVSDB_IDL_CONDITION_INIT(&pbs);
  sbrec_port_binding_add_clause_type(&pbs, OVSDB_F_EQ, "chassisredirect");
  sbrec_port_binding_set_condition(h->idl, &pbs);
  ovsdb_idl_condition_destroy(&pbs);
  return h;
}

int okna_sb_idl_is_connected(const okna_sb_idl* h) {
  return h && ovsdb_idl_is_connected(h->idl);
}

const char* okna_sb_idl_connection_error(const okna_sb_idl* h) {
  const int error = h ? ovsdb_idl_get_last_error(h->idl) : 0;
  return error ? ovs_retval_to_string(error) : "";
}

int okna_sb_idl_has_ever_connected(const okna_sb_idl* h) {
  return h && ovsdb_idl_has_ever_connected(h->idl);
}
