# Warnings for inlay's own targets (not for dependencies).
function(inlay_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough
    $<$<COMPILE_LANGUAGE:CXX>:-Wold-style-cast>)
  if(INLAY_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
