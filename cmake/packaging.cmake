# Debian packages of the CMake build (`cpack -G DEB` in the build folder;
# tools/packaging/build_debs.sh does the whole): libdelayq-dev (the library,
# headers, CMake package and pkg-config file) and delayq (the program and a
# systemd unit for `delayq serve`). Configure with
# -DCMAKE_INSTALL_PREFIX=/usr so that the library lands in the multiarch
# folder Debian's tools look in.

if(TARGET tools_delayq_delayq)
  install(TARGETS tools_delayq_delayq
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT program)
  install(FILES tools/packaging/delayq-serve.service
          DESTINATION lib/systemd/system COMPONENT program)
endif()

# Debian's place for a package's license.
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libdelayq-dev
        RENAME copyright COMPONENT library)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/delayq
        RENAME copyright COMPONENT program)

set(CPACK_PACKAGE_NAME delayq)
set(CPACK_PACKAGE_VENDOR "delayq authors")
set(CPACK_PACKAGE_CONTACT "delayq authors <delayq@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "embeddable delayed-job scheduler (memory, SQLite and Redis stores)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL library program)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)

set(CPACK_DEBIAN_LIBRARY_PACKAGE_NAME libdelayq-dev)
set(CPACK_DEBIAN_LIBRARY_PACKAGE_SECTION libdevel)
# A static library: what links it needs the libraries it was built on.
# One string: two would make a CMake list, whose ';' breaks the field.
set(CPACK_DEBIAN_LIBRARY_PACKAGE_DEPENDS
    "libabsl-dev, libsqlite3-dev, libhiredis-dev, libpq-dev, libssl-dev, pkg-config")
set(CPACK_COMPONENT_LIBRARY_DESCRIPTION
    "delayq: the C++ library, its headers, CMake package and pkg-config file")

set(CPACK_DEBIAN_PROGRAM_PACKAGE_NAME delayq)
set(CPACK_DEBIAN_PROGRAM_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PROGRAM_PACKAGE_SHLIBDEPS ON)
set(CPACK_COMPONENT_PROGRAM_DESCRIPTION
    "delayq: the delayq command (add, work, stats, serve ...) and a systemd unit")

include(CPack)
