# ckgenConfig.cmake: the CMake package of ckgen. Found by
#     cmake -Dckgen_DIR="$(ckgen cmake-dir)" ...      (or CMAKE_PREFIX_PATH / ckgen_ROOT set to that directory)
#     find_package(ckgen REQUIRED)
# It provides ckgen_add_library() (see ckgen.cmake) and the cache variable CKGEN_EXECUTABLE.
include("${CMAKE_CURRENT_LIST_DIR}/ckgen.cmake")
set(ckgen_FOUND TRUE)
