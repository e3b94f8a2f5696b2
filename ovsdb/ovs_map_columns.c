/* ovs_map_columns.c -- the large string maps read from their datum, not from a parsed copy.
 *
 * The C IDL keeps every column of a replicated row twice: its datum (the atoms as received) and,
 * for the generated struct, a parsed copy. For a map that copy is an smap: a node and two
 * strdup'd strings per entry. On a hypervisor with 1,000 networks the agent replicates ~2,000
 * Port_Binding rows (Neutron writes ~10 external_ids each, of which it reads 3), ~2,000 local
 * Interface rows (ovn-controller writes ~6) and 1,000 Datapath_Binding rows: ~4 MB of copies
 * nobody reads. Those columns' parse functions are replaced (process-wide; the generated column
 * tables are writable globals) by ones that leave the smap empty, and the glue reads them with
 * okna_glue_map_get()/okna_glue_map_datum().
 *
 * The same hooks share the maps' repeated strings. Each string atom is a JSON string of its own
 * (a 40-byte struct json and the characters: ~90 bytes of heap with malloc's overhead), and the
 * keys are the same few dozen on every row: 2,000 Port_Bindings x 8 Neutron keys, 2,000
 * Interfaces x 4-6 keys of ovn-controller and Nova, 1,000 Datapath_Bindings. Before a row's map
 * is (not) parsed, its keys, and its values of up to kShortValue bytes ("", "true", "active",
 * "compute:nova", revision numbers: the ones that repeat; ids and addresses are longer or
 * unique), are replaced by one shared JSON string per distinct text (JSON strings are reference
 * counted; the datum keeps its sort order, the text being the same). The table is per thread:
 * the reference counts are not atomic, and an IDL is used from one thread only (its rows are
 * parsed and destroyed there). Compiled as C. */

#include <config.h> /* must come first in every translation unit that includes OVS headers */

#include <pthread.h>
#include <string.h>

#include "hash.h"
#include "okna-vswitch-idl.h"
#include "openvswitch/hmap.h"
#include "openvswitch/json.h"
#include "ovn-sb-idl.h"
#include "ovs_idl_glue_private.h"
#include "ovsdb-data.h"
#include "ovsdb-idl-provider.h"
#include "smap.h"
#include "util.h"

/* ---- The per-thread table of shared strings ------------------------------------------------ */

/* Values longer than this are not shared: ids, MACs with their text around, addresses, times. */
enum { kShortValue = 20 };

struct interned {
  struct hmap_node node; /* hash_string(json->string) */
  struct json* json;     /* the table's reference */
};

struct intern_table {
  struct hmap strings;
  /* Entries left after the last sweep: the table is swept (strings no row holds any more are
   * freed) when it has doubled since. */
  size_t after_sweep;
};

static pthread_key_t intern_key;
static pthread_once_t intern_key_once = PTHREAD_ONCE_INIT;

static void intern_table_destroy(void* p) {
  struct intern_table* t = p;
  struct interned* e;
  HMAP_FOR_EACH_POP(e, node, &t->strings) {
    json_destroy(e->json);
    free(e);
  }
  hmap_destroy(&t->strings);
  free(t);
}

static void intern_key_create(void) {
  /* The destructor runs when a thread that parsed rows exits (the IDL thread). */
  (void)pthread_key_create(&intern_key, intern_table_destroy);
}

static struct intern_table* intern_table(void) {
  pthread_once(&intern_key_once, intern_key_create);
  struct intern_table* t = pthread_getspecific(intern_key);
  if (!t) {
    t = xzalloc(sizeof *t);
    hmap_init(&t->strings);
    if (pthread_setspecific(intern_key, t)) {
      free(t);
      return NULL;
    }
  }
  return t;
}

static void intern_sweep(struct intern_table* t) {
  struct interned* e;
  HMAP_FOR_EACH_SAFE(e, node, &t->strings) {
    if (e->json->count == 1) { /* only the table holds it */
      hmap_remove(&t->strings, &e->node);
      json_destroy(e->json);
      free(e);
    }
  }
  t->after_sweep = hmap_count(&t->strings);
}

/* Makes 'atom' (a string) the table's JSON string of the same text. */
static void intern_atom(struct intern_table* t, union ovsdb_atom* atom) {
  struct json* s = atom->s;
  const uint32_t hash = hash_string(s->string, 0);
  struct interned* e;
  HMAP_FOR_EACH_WITH_HASH(e, node, hash, &t->strings) {
    if (e->json == s) {
      return;
    }
    if (!strcmp(e->json->string, s->string)) {
      atom->s = json_clone(e->json);
      json_destroy(s);
      return;
    }
  }
  if (hmap_count(&t->strings) >= 2 * t->after_sweep + 256) {
    intern_sweep(t);
  }
  e = xmalloc(sizeof *e);
  e->json = json_clone(s);
  hmap_insert(&t->strings, &e->node, hash);
}

/* Shares the keys, and the short values, of a string-to-string map datum of 'row'. */
static void intern_map(const struct ovsdb_datum* datum_, const struct ovsdb_type* type) {
  struct intern_table* t = intern_table();
  if (!t || !datum_->n) {
    return;
  }
  /* The row's own datum (ovsdb_idl_row_parse, ovsdb_idl_txn_write): its atoms are changed for
   * equal ones, so it is given arrays of its own first if it shares them with a copy. Never an
   * index search row's (ovsdb_idl_index_write frees only its arrays, not the atoms): the agent's
   * IDLs have no index. */
  struct ovsdb_datum* datum = CONST_CAST(struct ovsdb_datum*, datum_);
  ovsdb_datum_unshare(datum, type);
  for (size_t i = 0; i < datum->n; i++) {
    intern_atom(t, &datum->keys[i]);
    if (strlen(datum->values[i].s->string) <= kShortValue) {
      intern_atom(t, &datum->values[i]);
    }
  }
}

/* ---- The parse functions ------------------------------------------------------------------ */

static void port_binding_external_ids_unparsed(struct ovsdb_idl_row* row,
                                               const struct ovsdb_datum* datum) {
  intern_map(datum, &sbrec_port_binding_col_external_ids.type);
  smap_init(&CONTAINER_OF(row, struct sbrec_port_binding, header_)->external_ids);
}

static void datapath_binding_external_ids_unparsed(struct ovsdb_idl_row* row,
                                                   const struct ovsdb_datum* datum) {
  intern_map(datum, &sbrec_datapath_binding_col_external_ids.type);
  smap_init(&CONTAINER_OF(row, struct sbrec_datapath_binding, header_)->external_ids);
}

static void interface_external_ids_unparsed(struct ovsdb_idl_row* row,
                                            const struct ovsdb_datum* datum) {
  intern_map(datum, &vsrec_interface_col_external_ids.type);
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
