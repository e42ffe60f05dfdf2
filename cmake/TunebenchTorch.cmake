# LibTorch from the PyTorch wheel inside a virtual environment that
# packaging/setup.sh makes (.venv/cpu or .venv/cuda). The version is stated
# once, in packaging/torch-versions.txt; configuring against another fails.
set(TUNEBENCH_TORCH_FLAVOUR "cpu" CACHE STRING
    "Which PyTorch wheel the trainer builds against: cpu or cuda")
set_property(CACHE TUNEBENCH_TORCH_FLAVOUR PROPERTY STRINGS cpu cuda)
set(TUNEBENCH_TORCH_VENV "${PROJECT_SOURCE_DIR}/.venv/${TUNEBENCH_TORCH_FLAVOUR}" CACHE PATH
    "Virtual environment holding the PyTorch wheel (packaging/setup.sh makes it)")

function(tunebench_wanted_torch_version flavour out)
    file(STRINGS "${PROJECT_SOURCE_DIR}/packaging/torch-versions.txt" lines
         REGEX "^${flavour}[ \t]+[0-9]")
    if(NOT lines)
        message(FATAL_ERROR "packaging/torch-versions.txt: no line for flavour '${flavour}' "
                            "(expected 'cpu <version>' and 'cuda <version>')")
    endif()
    string(REGEX REPLACE "^${flavour}[ \t]+([0-9.]+).*" "\\1" version "${lines}")
    set(${out} "${version}" PARENT_SCOPE)
endfunction()

# site-packages/torch of the environment, found without importing torch
# (an import costs seconds and needs numpy for no reason here).
function(tunebench_torch_package_dir out)
    set(python "${TUNEBENCH_TORCH_VENV}/bin/python")
    if(NOT EXISTS "${python}")
        message(FATAL_ERROR "TUNEBENCH_TORCH_VENV=${TUNEBENCH_TORCH_VENV}: no bin/python there. "
            "Run 'packaging/setup.sh build' (it makes the environment with the PyTorch wheel), "
            "or configure with -DTUNEBENCH_TRAINER=OFF for a build without the trainer.")
    endif()
    execute_process(
        COMMAND "${python}" -c "import importlib.util, os; s = importlib.util.find_spec('torch'); print(os.path.dirname(s.origin) if s else '')"
        OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR dir STREQUAL "")
        message(FATAL_ERROR "${python}: has no torch package; run 'packaging/setup.sh build'")
    endif()
    set(${out} "${dir}" PARENT_SCOPE)
endfunction()

tunebench_torch_package_dir(TUNEBENCH_TORCH_PACKAGE_DIR)
tunebench_wanted_torch_version(${TUNEBENCH_TORCH_FLAVOUR} _tb_wanted_torch)

# The CUDA toolkit as NVIDIA's wheels lay it out in nvidia/cu13 (nvcc, the
# runtime's headers and libraries; packaging/setup.sh installs them beside
# the CUDA wheel of torch), given the folder shape CMake's CUDA modules
# expect: lib64/, and unversioned names beside the versioned libraries.
function(tunebench_cuda_toolkit_from_wheels site out)
    set(cu "${site}/nvidia/cu13")
    if(NOT EXISTS "${cu}/bin/nvcc")
        message(FATAL_ERROR "${cu}: no bin/nvcc. The torch in ${TUNEBENCH_TORCH_VENV} is PyTorch's "
            "CUDA build (PyPI's torch for Linux is), whose CMake config needs the CUDA toolkit: "
            "'packaging/setup.sh build' installs NVIDIA's toolkit wheels "
            "(packaging/python-cuda-toolkit.txt) beside it; or install the CPU build there "
            "(pip install torch==${_tb_wanted_torch} --index-url https://download.pytorch.org/whl/cpu).")
    endif()
    set(shim "${CMAKE_BINARY_DIR}/cuda-toolkit")
    file(REMOVE_RECURSE "${shim}")
    file(MAKE_DIRECTORY "${shim}/lib" "${shim}/bin")
    foreach(part include nvvm)
        file(CREATE_LINK "${cu}/${part}" "${shim}/${part}" SYMBOLIC)
    endforeach()
    # nvcc finds the toolkit at bin/..: bin must be a real folder of the shim.
    file(GLOB tools "${cu}/bin/*")
    foreach(tool ${tools})
        get_filename_component(name "${tool}" NAME)
        file(CREATE_LINK "${tool}" "${shim}/bin/${name}" SYMBOLIC)
    endforeach()
    file(GLOB libs "${cu}/lib/lib*")
    foreach(lib ${libs})
        get_filename_component(name "${lib}" NAME)
        file(CREATE_LINK "${lib}" "${shim}/lib/${name}" SYMBOLIC)
        string(REGEX REPLACE "\\.so\\.[0-9.]+$" ".so" plain "${name}")
        if(NOT plain STREQUAL name AND NOT EXISTS "${shim}/lib/${plain}")
            file(CREATE_LINK "${lib}" "${shim}/lib/${plain}" SYMBOLIC)
        endif()
    endforeach()
    file(CREATE_LINK lib "${shim}/lib64" SYMBOLIC)
    set(${out} "${shim}" PARENT_SCOPE)
endfunction()

# Whether the wheel is PyTorch's CUDA build, whatever flavour was asked for:
# pip serves the CUDA build for Linux from PyPI, so a CPU-flavour environment
# may hold one. It builds all the same (with the toolkit its config needs),
# and its trainer trains on the CPU of a machine without a GPU.
if(EXISTS "${TUNEBENCH_TORCH_PACKAGE_DIR}/lib/libtorch_cuda.so")
    set(TUNEBENCH_TORCH_WHEEL_CUDA ON)
else()
    set(TUNEBENCH_TORCH_WHEEL_CUDA OFF)
endif()
if(TUNEBENCH_TORCH_FLAVOUR STREQUAL "cuda" AND NOT TUNEBENCH_TORCH_WHEEL_CUDA)
    message(FATAL_ERROR "${TUNEBENCH_TORCH_PACKAGE_DIR}: no lib/libtorch_cuda.so; the cuda flavour "
        "needs PyTorch's CUDA build. Run 'TUNEBENCH_TORCH=cuda packaging/setup.sh build'.")
endif()

if(TUNEBENCH_TORCH_WHEEL_CUDA)
    get_filename_component(_tb_site "${TUNEBENCH_TORCH_PACKAGE_DIR}" DIRECTORY)
    tunebench_cuda_toolkit_from_wheels("${_tb_site}" _tb_cuda_root)
    set(CUDAToolkit_ROOT "${_tb_cuda_root}")
    set(CUDA_TOOLKIT_ROOT_DIR "${_tb_cuda_root}" CACHE PATH "CUDA toolkit from NVIDIA's wheels" FORCE)
    set(CMAKE_CUDA_COMPILER "${_tb_cuda_root}/bin/nvcc" CACHE FILEPATH "nvcc from NVIDIA's wheels" FORCE)
    # The trainer has no kernels of its own; naming the architectures keeps
    # Caffe2's config from probing for a GPU (none on build machines).
    set(TORCH_CUDA_ARCH_LIST "8.0;8.6;8.9;9.0" CACHE STRING "GPU architectures (A100, A10, L40S, H100)")
    set(CMAKE_CUDA_STANDARD 17)
    # cuDNN, NCCL and the other libraries torch loads live in nvidia/<name>.
    file(GLOB _tb_nvidia_dirs LIST_DIRECTORIES true "${_tb_site}/nvidia/*")
    list(APPEND CMAKE_PREFIX_PATH ${_tb_nvidia_dirs})
    set(TUNEBENCH_NCCL_INCLUDE_DIR "${_tb_site}/nvidia/nccl/include")
endif()

# TorchConfig's find_library calls search the system's folders before the
# wheel's: a LibTorch installed there (Debian's libtorch-dev) would win.
# Name the wheel's own libraries first.
foreach(_tb_pair "TORCH_LIBRARY;torch" "C10_LIBRARY;c10" "torch_cpu_LIBRARY;torch_cpu"
        "torch_cuda_LIBRARY;torch_cuda" "C10_CUDA_LIBRARY;c10_cuda"
        "CAFFE2_NVRTC_LIBRARY;caffe2_nvrtc")
    list(GET _tb_pair 0 _tb_var)
    list(GET _tb_pair 1 _tb_lib)
    set(_tb_file "${TUNEBENCH_TORCH_PACKAGE_DIR}/lib/lib${_tb_lib}.so")
    if(EXISTS "${_tb_file}")
        set(${_tb_var} "${_tb_file}" CACHE FILEPATH "from the PyTorch wheel" FORCE)
    endif()
endforeach()
list(APPEND CMAKE_PREFIX_PATH "${TUNEBENCH_TORCH_PACKAGE_DIR}/share/cmake")
find_package(Torch REQUIRED)
if(NOT Torch_VERSION VERSION_EQUAL _tb_wanted_torch)
    message(FATAL_ERROR "${TUNEBENCH_TORCH_VENV} holds torch ${Torch_VERSION}; "
        "packaging/torch-versions.txt asks for ${_tb_wanted_torch} (${TUNEBENCH_TORCH_FLAVOUR}). "
        "Run 'packaging/setup.sh build' to install it.")
endif()
message(STATUS "LibTorch ${Torch_VERSION} (${TUNEBENCH_TORCH_FLAVOUR}) from ${TUNEBENCH_TORCH_PACKAGE_DIR}")
