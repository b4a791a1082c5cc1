# Warnings as errors apply to Rill's own targets only (never to third-party headers, which are
# included as SYSTEM by their imported targets).
function(rill_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-error=deprecated-declarations)
endfunction()
