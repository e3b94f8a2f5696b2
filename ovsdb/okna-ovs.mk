# Extra make rules layered on Open vSwitch's generated (automake) Makefile by cmake/OpenVSwitch.cmake:
#     make -f Makefile -f okna-ovs.mk okna-all OKNA_SB_SCHEMA=... OKNA_SB_ANN=... \
#         OKNA_VSWITCH_ANN=...
# It reuses OVS's own variables and rules (BUILT_SOURCES, OVSDB_IDLC, the .ovsidl.c/.ovsidl.h
# suffix rules) so the OVN_Southbound IDL and the agent's trimmed Open_vSwitch IDL are generated exactly like
# OVS generates vswitch-idl.

# Libraries libopenvswitch may need that ovs::openvswitch links (see OpenVSwitch.cmake).
OKNA_ALLOWED_LIBS = -latomic -lm -lpthread -lrt -ldl -lssl -lcrypto

# `make lib/libopenvswitch.la` alone does not build BUILT_SOURCES (odp-netlink.h, vswitch-idl.h,
# ...): automake only builds them for all/check/install. Build the ones under include/ and lib/.
OKNA_LIB_BUILT = $(filter include/% lib/%,$(BUILT_SOURCES))

.PHONY: okna-all okna-check-libs okna-libopenvswitch

okna-all: okna-libopenvswitch okna/ovn-sb-idl.c okna/ovn-sb-idl.h okna/okna-vswitch-idl.c \
  okna/okna-vswitch-idl.h

okna-check-libs:
	@bad='$(filter-out $(OKNA_ALLOWED_LIBS),$(LIBS) $(SSL_LIBS) $(CAPNG_LDADD))'; \
	if test -n "$$bad"; then \
	  echo "okna: OVS configure added '$$bad' to libopenvswitch's link line; disable the" \
	       "feature in cmake/OpenVSwitch.cmake or link it in ovs::openvswitch" >&2; \
	  exit 1; \
	fi

okna-libopenvswitch: $(OKNA_LIB_BUILT)
	$(MAKE) lib/libopenvswitch.la
	test -f lib/.libs/libopenvswitchavx512.a || $(AR) cr lib/.libs/libopenvswitchavx512.a

okna/ovn-sb-idl.ovsidl: $(OKNA_SB_SCHEMA) $(OKNA_SB_ANN) ovsdb/ovsdb-idlc.in
	@$(MKDIR_P) okna
	$(AM_V_GEN)$(OVSDB_IDLC) annotate $(OKNA_SB_SCHEMA) $(OKNA_SB_ANN) > $@.tmp && mv $@.tmp $@
okna/okna-vswitch-idl.ovsidl: $(srcdir)/vswitchd/vswitch.ovsschema $(OKNA_VSWITCH_ANN) ovsdb/ovsdb-idlc.in
	@$(MKDIR_P) okna
	$(AM_V_GEN)$(OVSDB_IDLC) annotate $(srcdir)/vswitchd/vswitch.ovsschema $(OKNA_VSWITCH_ANN) > $@.tmp && mv $@.tmp $@
# okna/ovn-sb-idl.c, okna/okna-vswitch-idl.c and their .h come from OVS's suffix rules:
#   .ovsidl.c: $(OVSDB_IDLC) c-idl-source $< > $@    .ovsidl.h: $(OVSDB_IDLC) c-idl-header $< > $@
