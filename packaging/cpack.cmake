# `cpack -G DEB` in a build folder makes a Debian package of the executables,
# presets and desktop entry. Runtime dependencies come from dpkg-shlibdeps,
# so they match the libraries the binaries actually link.
include(GNUInstallDirs)

install(TARGETS tunebench-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TUNEBENCH_GUI)
    install(TARGETS tunebench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    install(FILES ${PROJECT_SOURCE_DIR}/resources/tunebench.desktop
            DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
    install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/tunebench.svg
            DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/presets/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/tunebench/presets)

set(CPACK_PACKAGE_NAME tunebench)
set(CPACK_PACKAGE_VENDOR "Tunebench")
set(CPACK_PACKAGE_CONTACT "Tunebench maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
include(CPack)
