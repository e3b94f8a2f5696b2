# Installation rules and the Debian package (CPack DEB generator), for running the agent outside
# Kubernetes with a kubeconfig (in Kubernetes: the chart in deploy/helm, the image in packaging/).
#   cmake --build build --target openkeel-node-agent && (cd build && cpack -G DEB)
#   apt install ./build/openkeel-node-agent_<version>_amd64.deb
# Installs /usr/bin/openkeel-node-agent (debug info stripped), the documented default config
# /etc/openkeel-node-agent/agent.yaml and /etc/default/openkeel-node-agent (conffiles), and the
# systemd unit openkeel-node-agent.service (not enabled: it needs a kubeconfig first).
install(TARGETS openkeel-node-agent RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/deb/agent.yaml DESTINATION /etc/openkeel-node-agent)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/deb/default RENAME openkeel-node-agent DESTINATION /etc/default)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/deb/openkeel-node-agent.service
        DESTINATION /lib/systemd/system)

# Debian's documentation files: copyright, the (native) changelog and the man page, compressed as
# dpkg expects (gzip -9n: no name or time inside, so the package is reproducible).
set(OKNA_DEB_DOC ${PROJECT_BINARY_DIR}/deb-doc)
file(MAKE_DIRECTORY ${OKNA_DEB_DOC})
foreach(pair "changelog;changelog.gz" "openkeel-node-agent.8;openkeel-node-agent.8.gz")
  list(GET pair 0 source)
  list(GET pair 1 target)
  execute_process(COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/packaging/deb/${source}
                  OUTPUT_FILE ${OKNA_DEB_DOC}/${target} COMMAND_ERROR_IS_FATAL ANY)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/packaging/deb/copyright ${OKNA_DEB_DOC}/changelog.gz
        DESTINATION share/doc/openkeel-node-agent)
install(FILES ${OKNA_DEB_DOC}/openkeel-node-agent.8.gz DESTINATION share/man/man8)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME openkeel-node-agent)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OpenKeel node agent: OVN chassis, Placement, metadata service")
# The extended description: CPack puts the summary first and indents these lines (an empty line
# becomes " ."); under 80 columns each, as lintian asks.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "One event-loop daemon per hypervisor or gateway node of an OpenStack cloud
that runs on Kubernetes. It watches its own Node, derives the node's roles from
its labels and makes the node what they say: an OVN chassis of the right kind
(local Open_vSwitch external_ids), a Placement resource provider with live
reservations, and the host of the 169.254.169.254 metadata service (one ovnmeta
namespace per network, proxying to Nova as Neutron's OVN metadata agent does).

In Kubernetes the agent runs as a DaemonSet (Helm chart); this package runs it
on a host with a kubeconfig, under systemd.")
set(CPACK_PACKAGE_CONTACT "OpenKeel developers <openkeel-dev@lists.openkeel.invalid>")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # openkeel-node-agent_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)    # Depends: from dpkg-shlibdeps (libcurl4, libyaml-cpp0.7, ...)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "ca-certificates")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openvswitch-switch")
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
# dpkg keeps an administrator's edits of these on upgrade and removes them on purge only.
# The maintainer scripts: daemon-reload, restart on upgrade (only if running), stop on remove, the
# state directory removed on purge.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/deb/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/deb/maintainer/postinst
    ${PROJECT_SOURCE_DIR}/packaging/deb/maintainer/prerm
    ${PROJECT_SOURCE_DIR}/packaging/deb/maintainer/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
