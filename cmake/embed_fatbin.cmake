# cake_embed_fatbin(NAME SOURCE file.cu SYMBOL kName GENCODES arch=...,code=... ...
#                   [FLAGS nvcc flags ...] [DEPENDS headers ...])
# Compiles SOURCE with nvcc into ${CMAKE_CURRENT_BINARY_DIR}/NAME.fatbin for the GENCODES given,
# and embeds its bytes as `cake::gpuqueue::SYMBOL` (cmake/embed_binary.cmake) in
# ${CMAKE_CURRENT_BINARY_DIR}/NAME_fatbin.cc. Sets NAME_fatbin and NAME_fatbin_cc in the caller.
function(cake_embed_fatbin name)
  cmake_parse_arguments(F "" "SOURCE;SYMBOL" "GENCODES;FLAGS;DEPENDS" ${ARGN})
  set(fatbin ${CMAKE_CURRENT_BINARY_DIR}/${name}.fatbin)
  set(cc ${CMAKE_CURRENT_BINARY_DIR}/${name}_fatbin.cc)
  set(gencodes)
  foreach(g ${F_GENCODES})
    list(APPEND gencodes -gencode ${g})
  endforeach()
  add_custom_command(
    OUTPUT ${fatbin}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -fatbin -O3 -std=c++17 ${gencodes} ${F_FLAGS}
            -o ${fatbin} ${F_SOURCE}
    DEPENDS ${F_SOURCE} ${F_DEPENDS}
    COMMENT "nvcc ${name} (fatbin)")
  add_custom_command(
    OUTPUT ${cc}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${fatbin} -DINPUT_NAME=${name}.fatbin -DOUTPUT=${cc}
            -DSYMBOL=${F_SYMBOL} -P ${CMAKE_SOURCE_DIR}/cmake/embed_binary.cmake
    DEPENDS ${fatbin} ${CMAKE_SOURCE_DIR}/cmake/embed_binary.cmake
    COMMENT "embed ${name}.fatbin")
  set(${name}_fatbin ${fatbin} PARENT_SCOPE)
  set(${name}_fatbin_cc ${cc} PARENT_SCOPE)
endfunction()
