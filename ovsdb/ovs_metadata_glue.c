/* ovs_metadata_glue.c -- see ovs_metadata_glue.h. Compiled as C. */

#include <config.h> /* must come first in every translation unit that includes OVS headers */

#include "ovs_metadata_glue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "okna-vswitch-idl.h"
#include "ovn-sb-idl.h"
#include "ovs_idl_glue_private.h"
#include "ovsdb-data.h"
#include "ovsdb-idl-provider.h"
#include "ovsdb-idl.h"
#include "smap.h"
#include "util.h"
#include "uuid.h"

/* ---- Open_vSwitch -------------------------------------------------------------------------- */

void okna_ovs_idl_foreach_iface_ids(okna_ovs_idl* h, const char* bridge, const char* mark_key,
                                    okna_ovs_iface_ids_cb cb, void* ctx) {
  const struct vsrec_open_vswitch* ovs = h ? vsrec_open_vswitch_first(h->idl) : NULL;
  if (!ovs || !cb || !bridge || !mark_key) {
    return;
  }
  const struct ovsdb_idl_column* ids = &vsrec_interface_col_external_ids;
  for (size_t i = 0; i < ovs->n_bridges; i++) {
    const struct vsrec_bridge* br = ovs->bridges[i];
    if (strcmp(br->name, bridge)) {
      continue;
    }
    for (size_t j = 0; j < br->n_ports; j++) {
      const struct vsrec_port* port = br->ports[j];
      for (size_t k = 0; k < port->n_interfaces; k++) {
        const struct ovsdb_idl_row* row = &port->interfaces[k]->header_;
        cb(ctx, port->name, okna_glue_map_get(row, ids, "iface-id", ""),
           okna_glue_map_get(row, ids, "attached-mac", ""),
           okna_glue_map_get(row, ids, mark_key, ""));
      }
    }
  }
}

/* ---- OVN_Southbound: the chassis view ------------------------------------------------------ */

static const char* own_name(const okna_sb_idl* h) {
  return h->chassis_name ? h->chassis_name : "";
}

unsigned int okna_sb_idl_condition_seqno(const okna_sb_idl* h) {
  return h ? ovsdb_idl_get_condition_seqno(h->idl) : 0;
}

int okna_sb_idl_own_chassis_uuid(okna_sb_idl* h, char uuid[37]) {
  const struct sbrec_chassis* ch;
  SBREC_CHASSIS_FOR_EACH(ch, h->idl) {
    if (!strcmp(ch->name, own_name(h))) {
      snprintf(uuid, UUID_LEN + 1, UUID_FMT, UUID_ARGS(&ch->header_.uuid));
      return 1;
    }
  }
  uuid[0] = '\0';
  return 0;
}

static int is_own_chassis(const struct sbrec_chassis* ch, const char* name) {
  return ch && !strcmp(ch->name, name);
}

void okna_sb_idl_foreach_port(okna_sb_idl* h, okna_sb_port_view_cb cb, void* ctx) {
  if (!h || !cb) {
    return;
  }
  const char* own = own_name(h);
  const struct sbrec_port_binding* pb;
  SBREC_PORT_BINDING_FOR_EACH(pb, h->idl) {
    char row_uuid[UUID_LEN + 1];
    char dp_uuid[UUID_LEN + 1] = "";
    snprintf(row_uuid, sizeof row_uuid, UUID_FMT, UUID_ARGS(&pb->header_.uuid));
    /* Read the reference itself: the Datapath_Binding row may not be in the replica (yet). */
    const struct ovsdb_datum* dp = ovsdb_idl_read(&pb->header_, &sbrec_port_binding_col_datapath);
    if (dp && dp->n == 1) {
      snprintf(dp_uuid, sizeof dp_uuid, UUID_FMT, UUID_ARGS(&dp->keys[0].uuid));
    }
    okna_sb_port p;
    p.uuid = row_uuid;
    p.logical_port = pb->logical_port;
    p.type = pb->type ? pb->type : "";
    p.datapath = dp_uuid;
    p.on_chassis = is_own_chassis(pb->chassis, own);
    p.on_additional = 0;
    for (size_t i = 0; i < pb->n_additional_chassis; i++) {
      p.on_additional |= is_own_chassis(pb->additional_chassis[i], own);
    }
    p.mac0 = pb->n_mac ? pb->mac[0] : "";
    p.cidrs =
        okna_glue_map_get(&pb->header_, &sbrec_port_binding_col_external_ids, "neutron:cidrs", "");
    p.device_id = okna_glue_map_get(&pb->header_, &sbrec_port_binding_col_external_ids,
                                    "neutron:device_id", "");
    p.project_id = okna_glue_map_get(&pb->header_, &sbrec_port_binding_col_external_ids,
                                     "neutron:project_id", "");
    p.device_owner = okna_glue_map_get(&pb->header_, &sbrec_port_binding_col_external_ids,
                                       "neutron:device_owner", "");
    cb(ctx, &p);
  }
}

void okna_sb_idl_foreach_datapath(okna_sb_idl* h, okna_sb_datapath_cb cb, void* ctx) {
  if (!h || !cb) {
    return;
  }
  const struct sbrec_datapath_binding* dp;
  SBREC_DATAPATH_BINDING_FOR_EACH(dp, h->idl) {
    char uuid[UUID_LEN + 1];
    snprintf(uuid, sizeof uuid, UUID_FMT, UUID_ARGS(&dp->header_.uuid));
    cb(ctx, uuid,
       okna_glue_map_get(&dp->header_, &sbrec_datapath_binding_col_external_ids, "name", ""));
  }
}

long long okna_sb_idl_nb_cfg(okna_sb_idl* h) {
  const struct sbrec_sb_global* g = h ? sbrec_sb_global_first(h->idl) : NULL;
  return g ? g->nb_cfg : -1;
}

static const struct sbrec_chassis_private* own_private(okna_sb_idl* h) {
  const char* own = own_name(h);
  const struct sbrec_chassis_private* row;
  SBREC_CHASSIS_PRIVATE_FOR_EACH(row, h->idl) {
    if (!strcmp(row->name, own)) {
      return row;
    }
  }
  return NULL;
}

int okna_sb_idl_foreach_chassis_private_id(okna_sb_idl* h, okna_ovsdb_kv_cb cb, void* ctx) {
  const struct sbrec_chassis_private* row = h ? own_private(h) : NULL;
  if (!row) {
    return 0;
  }
  const struct smap_node* node;
  SMAP_FOR_EACH(node, &row->external_ids) {
    if (cb) {
      cb(ctx, node->key, node->value);
    }
  }
  return 1;
}

struct okna_sb_txn {
  struct ovsdb_idl_txn* txn;
  char error[256];
};

okna_sb_txn* okna_sb_txn_set_chassis_private_ids(okna_sb_idl* h, const char* const* kv,
                                                 size_t n_pairs, const char* const* del,
                                                 size_t n_del) {
  const struct sbrec_chassis_private* row = h ? own_private(h) : NULL;
  if (!row) {
    return NULL;
  }
  struct ovsdb_idl_txn* txn = ovsdb_idl_txn_create(h->idl);
  ovsdb_idl_txn_add_comment(txn, "openkeel-node-agent: metadata agent liveness");
  for (size_t i = 0; i < n_pairs; i++) {
    sbrec_chassis_private_update_external_ids_setkey(row, kv[2 * i], kv[2 * i + 1]);
  }
  for (size_t i = 0; i < n_del; i++) {
    sbrec_chassis_private_update_external_ids_delkey(row, del[i]);
  }
  okna_sb_txn* t = xzalloc(sizeof *t);
  t->txn = txn;
  return t;
}

okna_txn_status okna_sb_txn_commit(okna_sb_txn* t) {
  return okna_glue_txn_commit(t->txn, t->error, sizeof t->error);
}

void okna_sb_txn_wait(okna_sb_txn* t) {
  if (t) {
    ovsdb_idl_txn_wait(t->txn);
  }
}

const char* okna_sb_txn_error(const okna_sb_txn* t) {
  return t ? t->error : "";
}

void okna_sb_txn_destroy(okna_sb_txn* t) {
  if (t) {
    ovsdb_idl_txn_destroy(t->txn);
    free(t);
  }
}
