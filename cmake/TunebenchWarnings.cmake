# Warnings as errors for project code only: third-party headers come in as
# SYSTEM includes through their imported targets and do not trip these.
function(tunebench_warnings target)
    target_compile_options(${target} PRIVATE
        -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
        -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough
        -Werror
        # GCC 12 reports std::string concatenation at -O2 as overlapping
        # memcpy (GCC bug 105329, a false positive).
        $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
endfunction()

# One static library per core/ folder: tb_<name>, namespace tb::<name>.
function(tunebench_core_library name)
    cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
    add_library(tb_${name} STATIC ${ARG_SOURCES})
    add_library(tb::${name} ALIAS tb_${name})
    target_include_directories(tb_${name} PUBLIC ${PROJECT_SOURCE_DIR}/core)
    target_link_libraries(tb_${name} PUBLIC ${ARG_PUBLIC_LIBS} PRIVATE ${ARG_PRIVATE_LIBS})
    # core/ is Qt-free: no moc.
    set_target_properties(tb_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON AUTOMOC OFF)
    tunebench_warnings(tb_${name})
    tunebench_unity(tb_${name})
endfunction()
