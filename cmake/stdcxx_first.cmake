# The torch wheels export the copy of libstdc++'s std::filesystem they link statically
# (pytorch#133437). A fabkit binary whose std::filesystem references resolve into libtorch binds
# them to that copy, which jumps to a null pointer (torch 2.11's libtorch.so: create_directories,
# remove, remove_all -> SIGSEGV). Naming the *shared* libstdc++ before every other library, and
# not as-needed, resolves those references to it at link time and puts it first in the loader's
# search order.
#
# A plain `-lstdc++` is not enough: a toolchain whose own library folder holds only libstdc++.a
# (the GPU machines' /opt/gcc) links the static archive there, which, placed before the objects,
# contributes nothing, so the references went to libtorch after all. The shared library is named
# by its path: the compiler's own libstdc++.so, else its libstdc++.so.6, else the system's.
function(fabkit_stdcxx_first_link_options out_var)
  set(lib "")
  foreach(name libstdc++.so libstdc++.so.6)
    if(NOT lib)
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${name}
                      OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
      # Where the compiler has no such file it prints the bare name back.
      if(rc EQUAL 0 AND IS_ABSOLUTE "${path}" AND EXISTS "${path}")
        set(lib "${path}")
      endif()
    endif()
  endforeach()
  if(NOT lib)
    find_library(FABKIT_SHARED_LIBSTDCXX NAMES libstdc++.so.6 libstdc++.so)
    if(FABKIT_SHARED_LIBSTDCXX)
      set(lib "${FABKIT_SHARED_LIBSTDCXX}")
    endif()
  endif()
  if(lib)
    message(STATUS "fabkit: std::filesystem binds to ${lib} (named first on every link)")
    set(${out_var} "LINKER:--push-state,--no-as-needed" "${lib}" "LINKER:--pop-state" PARENT_SCOPE)
  else()
    message(WARNING "fabkit: no shared libstdc++ found (${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so "
                    "and the system library folders): linking -lstdc++, which a static-only toolchain "
                    "resolves to libstdc++.a; tests/integration/link checks the bindings")
    set(${out_var} "LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state" PARENT_SCOPE)
  endif()
endfunction()
