# The folder the set-up scripts install toolchains into (scripts/setup-cuda.sh, scripts/setup-rocm.sh), which the GPU
# modules search: the environment variable `override` names when set, else ${XDG_CACHE_HOME:-$HOME/.cache}/uform.
include_guard(GLOBAL)

# Sets `out` in the caller's scope to the cache folder, `override` being the name of the variable that replaces it.
function(uform_cache_directory override out)
    set(cache "$ENV{${override}}")
    if(NOT cache)
        if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
            set(cache "$ENV{XDG_CACHE_HOME}/uform")
        else()
            set(cache "$ENV{HOME}/.cache/uform")
        endif()
    endif()
    set(${out} "${cache}" PARENT_SCOPE)
endfunction()
