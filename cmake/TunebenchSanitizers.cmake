# TUNEBENCH_SANITIZE=address,undefined adds the sanitizers to every target.
set(TUNEBENCH_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list (empty: none)")
if(TUNEBENCH_SANITIZE)
    add_compile_options(-fsanitize=${TUNEBENCH_SANITIZE} -fno-omit-frame-pointer
                        -fno-sanitize-recover=all)
    add_link_options(-fsanitize=${TUNEBENCH_SANITIZE})
endif()
