/* ovs_idl_glue_private.h -- the handle structs shared by the glue's C files. Not for C++. */
#ifndef OKNA_OVSDB_OVS_IDL_GLUE_PRIVATE_H
#define OKNA_OVSDB_OVS_IDL_GLUE_PRIVATE_H

#include <stddef.h>

#include "ovs_chassis_glue.h" /* okna_txn_status */

struct ovsdb_datum;
struct ovsdb_idl;
struct ovsdb_idl_column;
struct ovsdb_idl_row;
struct ovsdb_idl_txn;

/* ovs_map_columns.c: Port_Binding, Datapath_Binding and Interface external_ids are not parsed
 * into their row struct's smap (left empty); read them with these. Once per process (later calls
 * return at once); every glue function that creates an IDL calls it first, so that no thread
 * parses rows while the column tables are changed. */
void okna_glue_leave_large_maps_unparsed(void);
/* The map column's current datum (keys sorted, string atoms). */
const struct ovsdb_datum* okna_glue_map_datum(const struct ovsdb_idl_row* row,
                                              const struct ovsdb_idl_column* column);
/* The value of 'key' in a string-to-string map column, or 'def'. */
const char* okna_glue_map_get(const struct ovsdb_idl_row* row,
                              const struct ovsdb_idl_column* column, const char* key,
                              const char* def);

/* Commits (non-blocking) and maps the IDL's status; on error writes the reason to `error`. */
okna_txn_status okna_glue_txn_commit(struct ovsdb_idl_txn* txn, char* error, size_t error_size);

struct okna_ovs_idl {
  struct ovsdb_idl* idl;
  char last_error[256];
};

struct okna_sb_idl {
  struct ovsdb_idl* idl;
  /* The chassis whose rows the readers tell (okna_sb_idl_open_empty; NULL: none). */
  char* chassis_name;
  /* Clauses okna_sb_idl_set_condition could not encode (ovs_monitor_glue.c). */
  size_t bad_clauses;
};

#endif /* OKNA_OVSDB_OVS_IDL_GLUE_PRIVATE_H */
