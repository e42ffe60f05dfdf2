# `cpack -G DEB` in a build folder makes a Debian package of the executables,
# presets, demo model and datasets, and desktop entry. Runtime dependencies
# come from dpkg-shlibdeps, so they match the libraries the binaries link.
#
# The trainer links LibTorch from the PyTorch wheel, which no Debian package
# provides: the package carries the wheel's libraries the trainer needs in
# /usr/lib/tunebench, and the trainer finds them through its rpath
# ($ORIGIN/../lib/tunebench). docs/ARCHITECTURE.md (Packaging) says why and
# what it weighs.
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
# The recipes name the demo model and datasets as ../../resources/demo: the
# same folder beside the installed presets keeps them working.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/demo/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/tunebench/resources/demo)

if(TARGET tunebench-trainer AND NOT TUNEBENCH_TORCH_WHEEL_CUDA)
    set(_tb_private_libdir "lib/tunebench")
    set_target_properties(tunebench-trainer PROPERTIES
        INSTALL_RPATH "$ORIGIN/../${_tb_private_libdir}")
    install(TARGETS tunebench-trainer RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    # What the trainer and libtorch_cpu.so load (readelf -d: NEEDED); the
    # wheel's libtorch_cpu.so finds libc10.so and its own libgomp.so.1
    # beside itself through its rpath $ORIGIN.
    foreach(_tb_lib libtorch_cpu.so libc10.so libgomp.so.1)
        set(_tb_file "${TUNEBENCH_TORCH_PACKAGE_DIR}/lib/${_tb_lib}")
        if(NOT EXISTS "${_tb_file}")
            message(FATAL_ERROR "${_tb_file}: missing from the PyTorch wheel; the package "
                                "needs it beside the trainer")
        endif()
        install(FILES "${_tb_file}" DESTINATION ${_tb_private_libdir})
    endforeach()
elseif(TARGET tunebench-trainer)
    # The CUDA wheel's libraries (cuDNN, NCCL, cuBLAS, ...) are gigabytes of
    # NVIDIA's wheels: GPU servers build the headless-cuda preset instead.
    message(STATUS "Package: a trainer built on PyTorch's CUDA wheel is not packaged "
                   "(only the CPU wheel's LibTorch is shipped in the .deb)")
endif()

set(CPACK_PACKAGE_NAME tunebench)
set(CPACK_PACKAGE_VENDOR "Tunebench")
set(CPACK_PACKAGE_CONTACT "Tunebench maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The default preset builds with debug information (RelWithDebInfo): the
# package carries stripped executables.
set(CPACK_STRIP_FILES ON)
include(CPack)
