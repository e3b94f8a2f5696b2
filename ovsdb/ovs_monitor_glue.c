/* ovs_monitor_glue.c -- see ovs_monitor_glue.h. Compiled as C. */

#include <config.h> /* must come first in every translation unit that includes OVS headers */

#include "ovs_monitor_glue.h"

#include <stdlib.h>
#include <string.h>

#include "okna-vswitch-idl.h"
#include "ovn-sb-idl.h"
#include "ovs_idl_glue_private.h"
#include "ovsdb-data.h"
#include "ovsdb-idl-provider.h"
#include "ovsdb-idl.h"
#include "util.h"
#include "uuid.h"

okna_ovs_idl* okna_ovs_idl_open_empty(const char* remote) {
  if (!remote) {
    return NULL;
  }
  okna_ovs_idl* h = xzalloc(sizeof *h);
  okna_glue_leave_large_maps_unparsed();
  h->idl = ovsdb_idl_create(remote, &vsrec_idl_class, false, true);
  return h;
}

okna_sb_idl* okna_sb_idl_open_empty(const char* remote, const char* chassis_name) {
  if (!remote) {
    return NULL;
  }
  okna_sb_idl* h = xzalloc(sizeof *h);
  h->chassis_name = xstrdup(chassis_name ? chassis_name : "");
  okna_glue_leave_large_maps_unparsed();
  h->idl = ovsdb_idl_create(remote, &sbrec_idl_class, false, true);
  ovsdb_idl_set_leader_only(h->idl, false);
  return h;
}

static const struct ovsdb_idl_table_class* find_table(const struct ovsdb_idl_class* class,
                                                      const char* table) {
  for (size_t i = 0; i < class->n_tables; i++) {
    if (!strcmp(class->tables[i].name, table)) {
      return &class->tables[i];
    }
  }
  return NULL;
}

static const struct ovsdb_idl_column* find_column(const struct ovsdb_idl_table_class* table,
                                                  const char* column) {
  for (size_t i = 0; table && i < table->n_columns; i++) {
    if (!strcmp(table->columns[i].name, column)) {
      return &table->columns[i];
    }
  }
  return NULL;
}

static int add_column(struct ovsdb_idl* idl, const struct ovsdb_idl_class* class, const char* table,
                      const char* column) {
  const struct ovsdb_idl_column* c = find_column(find_table(class, table), column);
  if (!c) {
    return 0;
  }
  ovsdb_idl_add_column(idl, c);
  return 1;
}

int okna_ovs_idl_add_column(okna_ovs_idl* h, const char* table, const char* column) {
  return h && table && column && add_column(h->idl, &vsrec_idl_class, table, column);
}

int okna_sb_idl_add_column(okna_sb_idl* h, const char* table, const char* column) {
  return h && table && column && add_column(h->idl, &sbrec_idl_class, table, column);
}

/* A table's rows by UUID: the generated IDL has no column for "_uuid", which OVSDB accepts in
 * conditions (RFC 7047 5.1), so this describes it for the condition encoder. */
static struct ovsdb_idl_column uuid_column = {
    .name = (char*)"_uuid",
    .type = OVSDB_TYPE_SCALAR_INITIALIZER(OVSDB_BASE_UUID_INIT),
    .is_mutable = false,
    .is_synthetic = false,
    .parse = NULL,
    .unparse = NULL,
};

/* Adds one clause; 0 when the column or the value does not fit. */
static int add_clause(struct ovsdb_idl_condition* cond, const struct ovsdb_idl_table_class* table,
                      const okna_clause* clause) {
  const struct ovsdb_idl_column* column =
      !strcmp(clause->column, "_uuid") ? &uuid_column : find_column(table, clause->column);
  if (!column || !clause->value) {
    return 0;
  }
  /* As the generated add_clause functions do: the IDL shares (refcounts) the datum's atoms, so
   * they live on the heap and are released with ovsdb_datum_destroy. */
  union ovsdb_atom* atom = xmalloc(sizeof *atom);
  switch (column->type.key.type) {
    case OVSDB_TYPE_STRING:
      atom->s = ovsdb_atom_string_create(clause->value);
      break;
    case OVSDB_TYPE_UUID:
      if (!uuid_from_string(&atom->uuid, clause->value)) {
        free(atom);
        return 0;
      }
      break;
    default:
      free(atom);
      return 0;
  }
  struct ovsdb_datum datum;
  datum.refcnt = NULL;
  datum.n = 1;
  datum.keys = atom;
  datum.values = NULL;
  ovsdb_idl_condition_add_clause(
      cond, clause->function == OKNA_CLAUSE_INCLUDES ? OVSDB_F_INCLUDES : OVSDB_F_EQ, column,
      &datum);
  ovsdb_datum_destroy(&datum, &column->type);
  return 1;
}

unsigned int okna_sb_idl_set_condition(okna_sb_idl* h, const char* table, int all_rows,
                                       const okna_clause* clauses, size_t n) {
  const struct ovsdb_idl_table_class* tc = h && table ? find_table(&sbrec_idl_class, table) : NULL;
  if (!tc) {
    return 0;
  }
  struct ovsdb_idl_condition cond = OVSDB_IDL_CONDITION_INIT(&cond);
  if (all_rows) {
    ovsdb_idl_condition_add_clause_true(&cond);
  } else {
    for (size_t i = 0; i < n; i++) {
      if (!add_clause(&cond, tc, &clauses[i])) {
        h->bad_clauses++;
      }
    }
  }
  /* No clause selects nothing (an empty condition is false). */
  unsigned int seqno = ovsdb_idl_set_condition(h->idl, tc, &cond);
  ovsdb_idl_condition_destroy(&cond);
  return seqno;
}

size_t okna_sb_idl_bad_clauses(const okna_sb_idl* h) {
  return h ? h->bad_clauses : 0;
}
