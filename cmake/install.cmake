# Install rules and packages (docs/install.md). GNUInstallDirs places:
#   bin/fabcheck                      the release copy (stripped, no RUNPATH; debug info apart)
#   bin/.debug/fabcheck.debug         its debug info (component "debug"; gdb finds it there)
#   libexec/fabkit/fabcheck-nccl-runner   (when NCCL was found; fabcheck looks there)
#   libexec/fabkit/fabcheck-gpu-bench     (when cuBLAS was found; fabcheck node --active looks there)
#   libexec/fabkit/fabcheck-health.sh     Slurm HealthCheckProgram
#   share/fabkit/slurm/*.sbatch           sbatch templates
#   share/fabkit/schema/*.schema.json     the --json contracts
#   share/doc/fabkit/                     README and docs/
#   bin/fabtrain + libexec/fabkit/fabtrain  (when built: a launcher that finds the torch wheel)
# Components: fabcheck (the fabkit-fabcheck .deb), nccl-runner, gpu-bench, fabtrain, debug.
include(GNUInstallDirs)

set(FABKIT_RELEASE_DIR "${CMAKE_BINARY_DIR}/release")
file(MAKE_DIRECTORY "${FABKIT_RELEASE_DIR}")

# The release copy of a target, made at build time (so `cmake --install` needs no tools beyond
# CMake), installed under name into destination as component.
function(fabkit_install_release_binary target destination component)
  set(out "${FABKIT_RELEASE_DIR}/${target}")
  add_custom_command(OUTPUT "${out}" "${out}.debug"
    COMMAND ${CMAKE_COMMAND} -DIN=$<TARGET_FILE:${target}> -DOUT=${out}
            -P ${PROJECT_SOURCE_DIR}/cmake/release_binary.cmake
    DEPENDS ${target} ${PROJECT_SOURCE_DIR}/cmake/release_binary.cmake
    COMMENT "Release copy of ${target} (debug info apart, no RUNPATH)" VERBATIM)
  add_custom_target(${target}_release ALL DEPENDS "${out}")
  install(PROGRAMS "${out}" DESTINATION "${destination}" COMPONENT ${component})
  install(FILES "${out}.debug" DESTINATION "${destination}/.debug" COMPONENT debug)
endfunction()

fabkit_install_release_binary(fabcheck "${CMAKE_INSTALL_BINDIR}" fabcheck)
if(TARGET fabcheck-nccl-runner)
  fabkit_install_release_binary(fabcheck-nccl-runner "${CMAKE_INSTALL_LIBEXECDIR}/fabkit" nccl-runner)
endif()
if(TARGET fabcheck-gpu-bench)  # `fabcheck node --active`'s GEMM and copy child (cuBLAS)
  fabkit_install_release_binary(fabcheck-gpu-bench "${CMAKE_INSTALL_LIBEXECDIR}/fabkit" gpu-bench)
endif()
install(PROGRAMS slurm/fabcheck-health.sh DESTINATION "${CMAKE_INSTALL_LIBEXECDIR}/fabkit" COMPONENT fabcheck)
install(FILES slurm/fabcheck-cluster.sbatch slurm/fabtrain.sbatch
        DESTINATION "${CMAKE_INSTALL_DATADIR}/fabkit/slurm" COMPONENT fabcheck)
install(DIRECTORY docs/schema/ DESTINATION "${CMAKE_INSTALL_DATADIR}/fabkit/schema" COMPONENT fabcheck
        FILES_MATCHING PATTERN "*.json")
install(FILES README.md DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT fabcheck)
install(DIRECTORY docs/ DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT fabcheck
        FILES_MATCHING PATTERN "*.md")

if(TARGET fabtrain)
  # fabtrain links LibTorch from the torch wheel. The wheel (~4 GB with its nvidia-* wheels)
  # stays a pip install on the node rather than a copy inside our tarball: bin/fabtrain finds it
  # at start (docs/install.md).
  fabkit_install_release_binary(fabtrain "${CMAKE_INSTALL_LIBEXECDIR}/fabkit" fabtrain)
  install(PROGRAMS scripts/fabtrain-launcher DESTINATION "${CMAKE_INSTALL_BINDIR}" RENAME fabtrain
          COMPONENT fabtrain)
endif()

# --- Packages: `cpack -G DEB` in the build dir makes fabkit-fabcheck_<version>_<arch>.deb -------
set(CPACK_PACKAGE_NAME fabkit)
set(CPACK_PACKAGE_VENDOR "fabkit")
set(CPACK_PACKAGE_CONTACT "fabkit developers <fabkit@localhost>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")  # the one version: project(VERSION) above
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU-cluster fabric checks (InfiniBand, RoCE, sockets) for multi-node training")
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_ARCHIVE_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL fabcheck)
if(TARGET fabtrain)
  list(APPEND CPACK_COMPONENTS_ALL fabtrain)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_FABCHECK_PACKAGE_NAME fabkit-fabcheck)
set(CPACK_DEBIAN_FABCHECK_PACKAGE_SECTION net)
set(CPACK_DEBIAN_FABTRAIN_PACKAGE_NAME fabkit-fabtrain)
# Depends computed from the binaries' NEEDED libraries by dpkg-shlibdeps (dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
# `fabcheck pair/cluster --ship` runs sh, mktemp, head and sha256sum on the hosts.
set(CPACK_DEBIAN_FABCHECK_PACKAGE_RECOMMENDS "openssh-client")
configure_file(cmake/cpack_options.cmake.in "${CMAKE_BINARY_DIR}/cpack_options.cmake" COPYONLY)
set(CPACK_PROJECT_CONFIG_FILE "${CMAKE_BINARY_DIR}/cpack_options.cmake")
include(CPack)
