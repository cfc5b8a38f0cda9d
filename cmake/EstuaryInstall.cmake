# The SDK as `cmake --install` lays it out under a prefix:
#   bin/estuary                         the command line
#   include/estuary/..., estuary_c.h    the public headers (the core's, the GE backend's, the SDK's
#                                       and the C API)
#   <libdir>/libestuary_core.so, libestuary_ge.so, libestuary_sdk.so (the C API is in the last)
#   <libdir>/estuary/plugins/*.so       the frontend and fusion plugins, found beside the core
#                                       library as in the build tree, so no path needs setting
#   <libdir>/cmake/Estuary/             find_package(Estuary): Estuary::estuary_core, Estuary::estuary_ge,
#                                       Estuary::estuary_sdk
#   <libdir>/pkgconfig/estuary.pc       pkg-config --cflags --libs estuary
#   share/estuary/configs/              the shipped pipelines (O0..O3), found by the installed command line
# The Python wheel (python/CMakeLists.txt, scikit-build) installs its own layout instead.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  return()
endif()

set(ESTUARY_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Estuary)

install(TARGETS estuary_core estuary_ge estuary_sdk EXPORT EstuaryTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/ ${PROJECT_SOURCE_DIR}/ge_backend/include/
                  ${PROJECT_SOURCE_DIR}/sdk/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${ESTUARY_OPS_HEADER} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/estuary/sdk)
get_property(ESTUARY_INSTALLED_PLUGINS GLOBAL PROPERTY ESTUARY_INSTALLED_PLUGINS)
install(TARGETS ${ESTUARY_INSTALLED_PLUGINS} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/estuary/plugins)
if(TARGET estuary)
  set_target_properties(estuary PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS estuary RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/estuary/configs
        FILES_MATCHING PATTERN "*.yaml")

install(EXPORT EstuaryTargets NAMESPACE Estuary:: DESTINATION ${ESTUARY_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/EstuaryConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/EstuaryConfig.cmake
                              INSTALL_DESTINATION ${ESTUARY_INSTALL_CMAKEDIR})
# 0.x releases change the API between minor versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/EstuaryConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/EstuaryConfig.cmake ${PROJECT_BINARY_DIR}/EstuaryConfigVersion.cmake
        DESTINATION ${ESTUARY_INSTALL_CMAKEDIR})
# Relative to the .pc file, so that the prefix given to `cmake --install --prefix` holds.
file(RELATIVE_PATH ESTUARY_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(${PROJECT_SOURCE_DIR}/cmake/estuary.pc.in ${PROJECT_BINARY_DIR}/estuary.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/estuary.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
