/* ovs_idl_glue_private.h -- the handle structs shared by the glue's C files. Not for C++. */
#ifndef OKNA_OVSDB_OVS_IDL_GLUE_PRIVATE_H
#define OKNA_OVSDB_OVS_IDL_GLUE_PRIVATE_H

#include <stddef.h>

#include "ovs_chassis_glue.h" /* okna_txn_status */

struct ovsdb_idl;
struct ovsdb_idl_txn;

/* Commits (non-blocking) and maps the IDL's status; on error writes the reason to `error`. */
okna_txn_status okna_glue_txn_commit(struct ovsdb_idl_txn* txn, char* error, size_t error_size);

struct okna_ovs_idl {
  struct ovsdb_idl* idl;
  char last_error[256];
};

struct okna_sb_idl {
  struct ovsdb_idl* idl;
  /* The chassis view's condition state (ovs_metadata_glue.c), freed by okna_sb_idl_close. */
  void* view;
  void (*free_view)(void*);
};

#endif /* OKNA_OVSDB_OVS_IDL_GLUE_PRIVATE_H */
