# mold links where it is installed (packaging/debian-packages.txt): about a
# hundred test executables each link LibTorch and the core libraries with
# their debug information, and GNU ld spends minutes of every build on them
# while ccache has already served the objects.
option(TUNEBENCH_MOLD "Link with mold when it is installed" ON)
find_program(TUNEBENCH_MOLD_PROGRAM mold)
if(TUNEBENCH_MOLD AND TUNEBENCH_MOLD_PROGRAM)
    add_link_options(-fuse-ld=mold)
    message(STATUS "Linking with ${TUNEBENCH_MOLD_PROGRAM}")
endif()
