/* ovs_idl_glue_private.h -- the handle structs shared by the glue's C files. Not for C++. */
#ifndef OKNA_OVSDB_OVS_IDL_GLUE_PRIVATE_H
#define OKNA_OVSDB_OVS_IDL_GLUE_PRIVATE_H

struct ovsdb_idl;

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
