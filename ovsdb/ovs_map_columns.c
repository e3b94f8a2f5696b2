/* ovs_map_columns.c -- the large string maps read from their datum, not from a parsed copy.
 *
 * The C IDL keeps every column of a replicated row twice: its datum (the atoms as received) and,
 * for the generated struct, a parsed copy. For a map that copy is an smap: a node and two
 * strdup'd strings per entry. On a hypervisor with 1,000 networks the agent replicates ~2,000
 * Port_Binding rows (Neutron writes ~10 external_ids each, of which it reads 3), ~2,000 local
 * Interface rows (ovn-controller writes ~6) and 1,000 Datapath_Binding rows: ~4 MB of copies
 * nobody reads. Those columns' parse functions are replaced (process-wide; the generated column
 * tables are writable globals) by ones that leave the smap empty, and the glue reads them with
 * okna_glue_map_get()/okna_glue_map_datum(). Compiled as C. */

#include <config.h> /* must come first in every translation unit that includes OVS headers */

#include <pthread.h>
#include <string.h>

#include "okna-vswitch-idl.h"
#include "ovn-sb-idl.h"
#include "ovs_idl_glue_private.h"
#include "ovsdb-data.h"
#include "ovsdb-idl-provider.h"
#include "smap.h"
#include "util.h"

static void port_binding_external_ids_unparsed(struct ovsdb_idl_row* row,
                                               const struct ovsdb_datum* datum) {
  (void)datum;
  smap_init(&CONTAINER_OF(row, struct sbrec_port_binding, header_)->external_ids);
}

static void datapath_binding_external_ids_unparsed(struct ovsdb_idl_row* row,
                                                   const struct ovsdb_datum* datum) {
  (void)datum;
  smap_init(&CONTAINER_OF(row, struct sbrec_datapath_binding, header_)->external_ids);
}

static void interface_external_ids_unparsed(struct ovsdb_idl_row* row,
                                            const struct ovsdb_datum* datum) {
  (void)datum;
  smap_init(&CONTAINER_OF(row, struct vsrec_interface, header_)->external_ids);
}

static void leave_large_maps_unparsed_once(void) {
  sbrec_port_binding_columns[SBREC_PORT_BINDING_COL_EXTERNAL_IDS].parse =
      port_binding_external_ids_unparsed;
  sbrec_datapath_binding_columns[SBREC_DATAPATH_BINDING_COL_EXTERNAL_IDS].parse =
      datapath_binding_external_ids_unparsed;
  vsrec_interface_columns[VSREC_INTERFACE_COL_EXTERNAL_IDS].parse = interface_external_ids_unparsed;
}

void okna_glue_leave_large_maps_unparsed(void) {
  /* Once per process, before the first IDL of these classes exists (the open functions call it;
   * IDLs may be opened on several threads, e.g. two agents in one test process): every row is
   * parsed and unparsed with the same functions. The generated unparse (smap_destroy) is kept. */
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, leave_large_maps_unparsed_once);
}

const struct ovsdb_datum* okna_glue_map_datum(const struct ovsdb_idl_row* row,
                                              const struct ovsdb_idl_column* column) {
  /* ovsdb_idl_read: the row's datum, including this transaction's writes. */
  return ovsdb_idl_read(row, column);
}

const char* okna_glue_map_get(const struct ovsdb_idl_row* row,
                              const struct ovsdb_idl_column* column, const char* key,
                              const char* def) {
  const struct ovsdb_datum* datum = okna_glue_map_datum(row, column);
  /* The IDL keeps a map's keys sorted (ovsdb_datum_sort when parsing): binary search. */
  size_t low = 0;
  size_t high = datum->n;
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    const int cmp = strcmp(json_string(datum->keys[mid].s), key);
    if (cmp == 0) {
      return json_string(datum->values[mid].s);
    }
    if (cmp < 0) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return def;
}
