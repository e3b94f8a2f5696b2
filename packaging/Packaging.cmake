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

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME openkeel-node-agent)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "OpenKeel per-node agent: OVN chassis, Placement provider and metadata service from the Node's roles")
set(CPACK_PACKAGE_CONTACT "OpenKeel developers <openkeel-dev@lists.openkeel.invalid>")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # openkeel-node-agent_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)    # Depends: from dpkg-shlibdeps (libcurl4, libyaml-cpp0.7, ...)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "ca-certificates")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openvswitch-switch")
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
# dpkg keeps an administrator's edits of these on upgrade and removes them on purge only.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/deb/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
