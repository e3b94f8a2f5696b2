# OpenVSwitch.cmake -- Open vSwitch's C IDL (libopenvswitch) built from Debian's openvswitch-source.
#
# Debian ships no libopenvswitch-dev, so at BUILD time (ExternalProject, stamped in the build tree:
# a second `cmake --build` does nothing, a fresh build dir rebuilds) this module
#   1. unpacks /usr/src/openvswitch/openvswitch.tar.gz into <build>/openvswitch/src
#      (runs ./boot.sh only if the tarball has no ./configure),
#   2. runs ./configure out of tree in <build>/openvswitch/build with the fewest features
#      (SSL on, libcap-ng/unbound/unwind/AF_XDP/DPDK/USDT off, -fPIC, CFLAGS=-O2 -g0),
#   3. builds only lib/libopenvswitch.la (+ the generated headers it needs, which include the
#      Open_vSwitch IDL lib/vswitch-idl.{c,h}: it is compiled into libopenvswitch already),
#   4. generates the OVN_Southbound IDL (okna/ovn-sb-idl.{c,h}) and a trimmed Open_vSwitch IDL
#      (okna/okna-vswitch-idl.{c,h}, prefix vsrec_: only the columns the agent uses, see
#      ovsdb/vswitch-idl.ann) with OVS's own ovsdb-idlc and OVS's own Makefile rules (annotate +
#      c-idl-source/c-idl-header), see ovsdb/okna-ovs.mk.
#
# Targets:
#   ovs::openvswitch  imported static libopenvswitch.a + its link deps; SYSTEM include dirs
#   ovs::sb_idl       static library with the generated OVN_Southbound IDL (sbrec_*)
#   ovs::vswitch_idl  static library with the generated, trimmed Open_vSwitch IDL (vsrec_*)
# Variables:
#   OVS_SOURCE_DIR, OVS_BUILD_DIR, OVS_SB_IDL_DIR, OVS_VSWITCH_SCHEMA, OVN_SB_SCHEMA
#
# Include after find_package(OpenSSL) and find_package(Threads). See ovsdb/BUILD-NOTES.md.

include_guard(GLOBAL)
include(ExternalProject)

if(NOT TARGET OpenSSL::SSL OR NOT TARGET Threads::Threads)
  message(FATAL_ERROR "Include OpenVSwitch.cmake after find_package(OpenSSL) and find_package(Threads)")
endif()

set(OVS_TARBALL "/usr/src/openvswitch/openvswitch.tar.gz" CACHE FILEPATH
    "Open vSwitch source tarball (Debian package openvswitch-source)")
set(OVN_SB_SCHEMA "/usr/share/ovn/ovn-sb.ovsschema" CACHE FILEPATH
    "OVN_Southbound schema the SB IDL is generated from (Debian package ovn-common)")
set(OVS_SB_IDL_ANNOTATION "${CMAKE_CURRENT_LIST_DIR}/../ovsdb/ovn-sb-idl.ann" CACHE FILEPATH
    "ovsdb-idlc annotation file for the OVN_Southbound IDL")
set(OVS_VSWITCH_IDL_ANNOTATION "${CMAKE_CURRENT_LIST_DIR}/../ovsdb/vswitch-idl.ann" CACHE FILEPATH
    "ovsdb-idlc annotation file for the agent's trimmed Open_vSwitch IDL")
get_filename_component(OVS_SB_IDL_ANNOTATION "${OVS_SB_IDL_ANNOTATION}" ABSOLUTE)
get_filename_component(_ovs_mk "${CMAKE_CURRENT_LIST_DIR}/../ovsdb/okna-ovs.mk" ABSOLUTE)
set(OVS_BUILD_JOBS 2 CACHE STRING "make -j for libopenvswitch when the generator is not Make")
# The sanitizer trees link the same unsanitized libopenvswitch as the main tree: point them at it
# rather than compiling it again (5 minutes on 2 cores). Empty: this tree builds its own.
set(OKNA_OVS_FROM "" CACHE PATH
    "A build tree whose libopenvswitch (<tree>/openvswitch) this one reuses; built first")

foreach(_f IN ITEMS OVS_TARBALL OVN_SB_SCHEMA OVS_SB_IDL_ANNOTATION OVS_VSWITCH_IDL_ANNOTATION)
  if(NOT EXISTS "${${_f}}")
    message(FATAL_ERROR "${_f}=${${_f}} does not exist. Install the Debian packages "
                        "openvswitch-source and ovn-common (packaging/install-deps.sh).")
  endif()
endforeach()

# Debian's python3, not a pyenv/virtualenv shim that may be on PATH.
find_program(OVS_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(OVS_PYTHON3 NAMES python3 REQUIRED)
find_program(OVS_MAKE NAMES gmake make REQUIRED)

if(OKNA_OVS_FROM)
  get_filename_component(_ovs_from "${OKNA_OVS_FROM}" ABSOLUTE BASE_DIR "${CMAKE_SOURCE_DIR}")
  set(OVS_PREFIX "${_ovs_from}/openvswitch")
else()
  set(OVS_PREFIX "${CMAKE_BINARY_DIR}/openvswitch")
endif()
set(OVS_SOURCE_DIR "${OVS_PREFIX}/src")
set(OVS_BUILD_DIR "${OVS_PREFIX}/build")
set(OVS_SB_IDL_DIR "${OVS_BUILD_DIR}/okna")
set(OVS_VSWITCH_SCHEMA "${OVS_SOURCE_DIR}/vswitchd/vswitch.ovsschema")
set(OVS_LIBRARY "${OVS_BUILD_DIR}/lib/.libs/libopenvswitch.a")
set(OVS_AVX512_LIBRARY "${OVS_BUILD_DIR}/lib/.libs/libopenvswitchavx512.a")

# Reconfigure (and so re-extract: the URL_HASH changes) when Debian upgrades the tarball.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${OVS_TARBALL}")
file(SHA256 "${OVS_TARBALL}" _ovs_tarball_sha256)

# Through the compiler cache too (CMakeLists.txt, OKNA_CCACHE): OVS's compiles name their files by
# absolute paths under OVS_PREFIX, which CCACHE_BASEDIR makes relative, and -ffile-prefix-map keeps
# the path out of the objects (OVS logs __FILE__), so a clone in another directory hits.
set(_ovs_cc "${CMAKE_C_COMPILER}")
if(OKNA_CCACHE_LAUNCHER AND NOT OKNA_OVS_FROM)
  set(_ovs_cc_wrapper "${OVS_PREFIX}/okna-cc")
  list(JOIN OKNA_CCACHE_LAUNCHER "\" \"" _ovs_launcher)
  string(REPLACE "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" "CCACHE_BASEDIR=${OVS_PREFIX}" _ovs_launcher
         "${_ovs_launcher}")
  file(WRITE "${_ovs_cc_wrapper}"
       "#!/bin/sh\n# OVS's C compiler: ${CMAKE_C_COMPILER} through ccache (cmake/OpenVSwitch.cmake)\n"
       "exec \"${_ovs_launcher}\" \"${CMAKE_C_COMPILER}\" \"$@\"\n")
  file(CHMOD "${_ovs_cc_wrapper}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
       GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  set(_ovs_cc "${_ovs_cc_wrapper}")
endif()

set(OVS_CONFIGURE_ARGS
    --enable-ssl            # ssl: remotes; fails configure if OpenSSL is missing
    --disable-libcapng
    --disable-afxdp
    --disable-usdt-probes
    --disable-shared --enable-static --with-pic
    # Optional libraries autodetected by configure with no --disable switch: force them off so
    # the link line is deterministic (checked after configure: okna-check-libs).
    ac_cv_lib_unbound_ub_ctx_create=no
    ac_cv_lib_unwind_unw_backtrace=no
    "CC=${_ovs_cc}"
    "CFLAGS=-O2 -g0 -ffile-prefix-map=${OVS_PREFIX}/="
    "PYTHON3=${OVS_PYTHON3}")

if(CMAKE_GENERATOR MATCHES "Make")
  set(_ovs_make "$(MAKE)")                       # share cmake --build's jobserver
else()
  set(_ovs_make "${OVS_MAKE}" "-j${OVS_BUILD_JOBS}")
endif()

if(OKNA_OVS_FROM)
  foreach(_f IN ITEMS "${OVS_LIBRARY}" "${OVS_SB_IDL_DIR}/ovn-sb-idl.c"
                  "${OVS_SB_IDL_DIR}/okna-vswitch-idl.c" "${OVS_BUILD_DIR}/config.h")
    if(NOT EXISTS "${_f}")
      message(FATAL_ERROR "OKNA_OVS_FROM=${OKNA_OVS_FROM}: ${_f} is missing; build that tree "
                          "first (cmake --build ${OKNA_OVS_FROM} --target openvswitch_ep)")
    endif()
  endforeach()
  # Nothing to build here; the targets below depend on it by name.
  add_custom_target(openvswitch_ep)
else()
ExternalProject_Add(openvswitch_ep
  PREFIX "${OVS_PREFIX}"
  SOURCE_DIR "${OVS_SOURCE_DIR}"
  BINARY_DIR "${OVS_BUILD_DIR}"
  STAMP_DIR "${OVS_PREFIX}/stamp"      # not under SOURCE_DIR: extraction replaces SOURCE_DIR
  TMP_DIR "${OVS_PREFIX}/tmp"
  DOWNLOAD_DIR "${OVS_PREFIX}/download"
  URL "${OVS_TARBALL}"
  URL_HASH "SHA256=${_ovs_tarball_sha256}"
  # Keep the archive's mtimes: otherwise automake's "missing" may try to regenerate
  # configure/Makefile.in from configure.ac/Makefile.am.
  DOWNLOAD_EXTRACT_TIMESTAMP TRUE
  PATCH_COMMAND sh -c "test -x ./configure || ./boot.sh"
  CONFIGURE_COMMAND "${OVS_SOURCE_DIR}/configure" ${OVS_CONFIGURE_ARGS}
    # Fail early if configure picked up a library ovs::openvswitch does not link.
    COMMAND ${OVS_MAKE} -s -f Makefile -f "${_ovs_mk}" okna-check-libs
  BUILD_COMMAND ${_ovs_make} -f Makefile -f "${_ovs_mk}"
    okna-all "OKNA_SB_SCHEMA=${OVN_SB_SCHEMA}" "OKNA_SB_ANN=${OVS_SB_IDL_ANNOTATION}"
    "OKNA_VSWITCH_ANN=${OVS_VSWITCH_IDL_ANNOTATION}"
  INSTALL_COMMAND ""
  TEST_COMMAND ""
  BUILD_BYPRODUCTS
    "${OVS_LIBRARY}" "${OVS_AVX512_LIBRARY}"
    "${OVS_BUILD_DIR}/lib/vswitch-idl.h" "${OVS_BUILD_DIR}/lib/vswitch-idl.c"
    "${OVS_SB_IDL_DIR}/ovn-sb-idl.h" "${OVS_SB_IDL_DIR}/ovn-sb-idl.c"
    "${OVS_SB_IDL_DIR}/okna-vswitch-idl.h" "${OVS_SB_IDL_DIR}/okna-vswitch-idl.c"
  # Output goes to <build>/openvswitch/stamp/openvswitch_ep-<step>-{out,err}.log, shown on failure.
  LOG_DOWNLOAD ON LOG_CONFIGURE ON LOG_BUILD ON LOG_OUTPUT_ON_FAILURE ON)
# Re-run the build step (= regenerate the IDLs only) when their inputs change.
ExternalProject_Add_StepDependencies(openvswitch_ep build
  "${OVN_SB_SCHEMA}" "${OVS_SB_IDL_ANNOTATION}" "${OVS_VSWITCH_IDL_ANNOTATION}" "${_ovs_mk}")
endif()

set(OVS_INCLUDE_DIRS
    "${OVS_BUILD_DIR}"            # config.h, "lib/vswitch-idl.h"
    "${OVS_SOURCE_DIR}"           # "lib/..." style includes
    "${OVS_SOURCE_DIR}/include"   # <openvswitch/...> public headers
    "${OVS_BUILD_DIR}/include"    # generated: openvswitch/version.h, odp-netlink.h
    "${OVS_SOURCE_DIR}/lib"       # ovsdb-idl.h, smap.h, poll-loop internals, ...
    "${OVS_BUILD_DIR}/lib")       # generated: vswitch-idl.h
# Imported targets reject include dirs that do not exist at generate time.
foreach(_d IN LISTS OVS_INCLUDE_DIRS ITEMS "${OVS_SB_IDL_DIR}")
  file(MAKE_DIRECTORY "${_d}")
endforeach()

add_library(ovs::openvswitch STATIC IMPORTED GLOBAL)
set_target_properties(ovs::openvswitch PROPERTIES
  IMPORTED_LOCATION "${OVS_LIBRARY}"
  IMPORTED_LINK_INTERFACE_LANGUAGES C
  # Imported targets' include dirs are SYSTEM includes for consumers (no -Werror fallout).
  INTERFACE_INCLUDE_DIRECTORIES "${OVS_INCLUDE_DIRS}"
  # libopenvswitchavx512.a: libtool does not merge this convenience lib into the static lib.
  INTERFACE_LINK_LIBRARIES
    "${OVS_AVX512_LIBRARY};OpenSSL::SSL;OpenSSL::Crypto;Threads::Threads;atomic;rt;m")
add_dependencies(ovs::openvswitch openvswitch_ep)

# The generated IDLs compiled as C (OVS's own flags, not the project's -Werror set).
function(okna_generated_idl target alias source)
  set_source_files_properties("${source}" PROPERTIES GENERATED TRUE)
  add_library(${target} STATIC "${source}")
  add_library(${alias} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    C_STANDARD 99 C_EXTENSIONS ON POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE -w)   # generated code, not ours
  target_include_directories(${target} SYSTEM PUBLIC "${OVS_SB_IDL_DIR}")
  target_link_libraries(${target} PUBLIC ovs::openvswitch)
  add_dependencies(${target} openvswitch_ep)
endfunction()
okna_generated_idl(okna_ovs_sb_idl ovs::sb_idl "${OVS_SB_IDL_DIR}/ovn-sb-idl.c")
okna_generated_idl(okna_ovs_vswitch_idl ovs::vswitch_idl "${OVS_SB_IDL_DIR}/okna-vswitch-idl.c")
