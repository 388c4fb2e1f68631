# cmake -DIN=<built binary> -DOUT=<release copy> -P release_binary.cmake
# The copy that `cmake --install` and the packages ship: debug info moved to OUT.debug (linked back
# with .gnu_debuglink, so gdb finds it beside the binary or in .debug/), symbols not needed for
# linking stripped, and no RUNPATH: the build tree's library paths (the checkout's .venv, torch's
# stray /lib/intel64) mean nothing on another machine. The build-tree binary itself is untouched.
find_program(OBJCOPY NAMES objcopy REQUIRED)
get_filename_component(name "${OUT}" NAME)
file(REMOVE "${OUT}" "${OUT}.debug")
execute_process(COMMAND "${OBJCOPY}" --only-keep-debug "${IN}" "${OUT}.debug" COMMAND_ERROR_IS_FATAL ANY)
# --add-gnu-debuglink records the debug file's name and CRC; run from its directory so the link
# holds the bare name (gdb looks beside the binary and in .debug/ under that name).
get_filename_component(dir "${OUT}" DIRECTORY)
execute_process(COMMAND "${OBJCOPY}" --strip-debug --strip-unneeded "--add-gnu-debuglink=${name}.debug"
                        "${IN}" "${OUT}" WORKING_DIRECTORY "${dir}" COMMAND_ERROR_IS_FATAL ANY)
file(RPATH_REMOVE FILE "${OUT}")
