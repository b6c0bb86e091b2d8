# Writes OUTPUT (C++) holding the bytes of INPUT as `alignas(16) const unsigned char SYMBOL[]` and
# `SYMBOL_size`, in namespace NAMESPACE (default cake::gpuqueue). Run with cmake -P at build time.
if(NOT NAMESPACE)
  set(NAMESPACE cake::gpuqueue)
endif()
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
       "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT_NAME} by cmake/embed_binary.cmake. Do not edit.\n"
     "#include <cstddef>\n"
     "namespace ${NAMESPACE} {\n"
     "alignas(16) extern const unsigned char ${SYMBOL}[] = {\n${bytes}};\n"
     "extern const size_t ${SYMBOL}_size = ${size};\n"
     "}  // namespace ${NAMESPACE}\n")
