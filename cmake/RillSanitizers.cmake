# One switch for the sanitizer presets; applied globally so that every Rill target (library, tests,
# examples) is instrumented consistently.
if(RILL_SANITIZER STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(RILL_SANITIZER STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT RILL_SANITIZER STREQUAL "")
  message(FATAL_ERROR "RILL_SANITIZER must be '', 'address' or 'thread', not '${RILL_SANITIZER}'")
endif()
