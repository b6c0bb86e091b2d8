# Install layout and the Debian package (CPack): `cmake --install build --prefix /usr` or
# `cpack --config build/CPackConfig.cmake` (a .deb with the binaries, the unit, sysusers.d and
# tmpfiles.d entries for the caked user and the cake group, and /etc/caked/caked.conf).
include(GNUInstallDirs)

install(TARGETS caked cakectl cakec cake-worker RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The unit names caked by its installed path, known only at install time (--prefix, CPack's /usr).
install(CODE "
  file(READ \"${CMAKE_SOURCE_DIR}/deploy/caked.service\" unit)
  string(REPLACE /usr/local/bin/caked \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/caked\" unit \"\${unit}\")
  file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/caked.service\" \"\${unit}\")
  message(STATUS \"Installing: \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/caked.service\")")
install(FILES deploy/caked.sysusers DESTINATION lib/sysusers.d RENAME caked.conf)
install(FILES deploy/caked.tmpfiles DESTINATION lib/tmpfiles.d RENAME caked.conf)
# The configuration is the system's (/etc), whatever the prefix.
install(FILES deploy/caked.conf DESTINATION /etc/caked PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
install(FILES README.md docs/agents.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/consumer-cake)
install(DIRECTORY contracts examples DESTINATION ${CMAKE_INSTALL_DATADIR}/consumer-cake)

set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_NAME consumer-cake)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Consumer CAKE developers <cake@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPU kernel schedule optimisation orchestrator (caked) and its command line (cakectl)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Shared-library dependencies from the binaries themselves (gRPC, Protobuf, Abseil, SQLite, ...);
# the CUDA toolkit (nvcc, ptxas) and the driver are the machine's, not Debian packages.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/postinst
                                      ${CMAKE_SOURCE_DIR}/deploy/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
