/* ovs_monitor_glue.h -- what an IDL monitors, by table and column NAME (as in the schema), for
 * the transport (idl_thread.h), which merges its participants' requests (participant.h) and
 * applies them here. Compiled as C, includes no OVS header; same threading rules as
 * ovs_idl_glue.h (every handle from one thread).
 *
 * Names rather than one C function per participant: a participant's monitor request is data the
 * transport can merge (two participants reading Port_Binding get one column set and one
 * condition, the OR of their clauses), print and test; the generated IDL class (vsrec_idl_class,
 * sbrec_idl_class) maps the names to its columns. Reading rows stays typed (ovs_chassis_glue.h,
 * ovs_metadata_glue.h), through the generated accessors.
 */
#ifndef OKNA_OVSDB_OVS_MONITOR_GLUE_H
#define OKNA_OVSDB_OVS_MONITOR_GLUE_H

#include <stddef.h>

#include "ovs_chassis_glue.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An IDL that monitors nothing yet: add the columns before the first okna_*_idl_run. The
 * Southbound one belongs to one chassis ('chassis_name': its readers tell this chassis's rows)
 * and reads from any cluster member (not only the RAFT leader), like ovn-controller. */
okna_ovs_idl* okna_ovs_idl_open_empty(const char* remote);
okna_sb_idl* okna_sb_idl_open_empty(const char* remote, const char* chassis_name);

/* Monitors table.column. 0 when the schema has no such table or column. */
int okna_ovs_idl_add_column(okna_ovs_idl*, const char* table, const char* column);
int okna_sb_idl_add_column(okna_sb_idl*, const char* table, const char* column);

typedef enum okna_clause_function {
  OKNA_CLAUSE_EQ,      /* column == value */
  OKNA_CLAUSE_INCLUDES /* the column's set includes value */
} okna_clause_function;

typedef struct okna_clause {
  const char* column; /* "_uuid": the row's UUID */
  okna_clause_function function;
  const char* value; /* a string, or a UUID for a UUID (reference) column */
} okna_clause;

/* Sets the condition of a monitored Southbound table: every row when 'all_rows', else the rows
 * any clause selects (none: no row). A clause naming an unknown column or a value that does not
 * parse is left out (returns the seqno all the same; see okna_sb_idl_bad_clauses). Returns the
 * condition sequence number the replica reaches once the server applied it (compare with
 * okna_sb_idl_condition_seqno); 0 for an unknown table. */
unsigned int okna_sb_idl_set_condition(okna_sb_idl*, const char* table, int all_rows,
                                       const okna_clause* clauses, size_t n);
/* Clauses left out by okna_sb_idl_set_condition so far. */
size_t okna_sb_idl_bad_clauses(const okna_sb_idl*);

#ifdef __cplusplus
}
#endif

#endif /* OKNA_OVSDB_OVS_MONITOR_GLUE_H */
