# The Debian package of `parley` (cpack -G DEB in the build folder):
# /usr/bin/parley, the systemd unit, the configuration template that postinst
# turns into /etc/parley/parley.toml, and the operator's docs.
include(GNUInstallDirs)
set(_deb ${PROJECT_SOURCE_DIR}/deploy/debian)

install(TARGETS parley RUNTIME DESTINATION bin)
install(FILES ${_deb}/parley.service ${_deb}/parley-persist.service DESTINATION lib/systemd/system)
install(FILES ${_deb}/parley.toml.in DESTINATION share/parley)
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md ${PROJECT_SOURCE_DIR}/docs/PROTOCOL.md
        DESTINATION share/doc/parley)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/prometheus ${PROJECT_SOURCE_DIR}/deploy/grafana
        DESTINATION share/parley)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME parley)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "Parley maintainers <parley@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "realtime messaging server for multiplayer games")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libpq5: loaded with dlopen when PostgreSQL is configured, so shlibdeps cannot see it.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, libpq5")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${_deb}/postinst ${_deb}/prerm ${_deb}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
