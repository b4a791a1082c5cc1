# The layering check (ctest: layering): every `#include "<folder>/..."` in a file under
# src/<layer>/ must name that layer or one it uses, directly or through another layer, as declared
# in src/CMakeLists.txt (rill_layer ... USES). A public header (include/rill/) belongs to the layer
# that declares it (rill_layer ... HEADERS); an `#include "rill/..."`, in src/ or in a public
# header, must name a header of a layer the includer reaches. So no layer includes a layer above
# it, and no dependency goes undeclared. Prints every offending include, then fails.
#   cmake -DSRC=<src dir> -DINCLUDE=<include dir> -DGRAPH=<build>/rill_layers.cmake -P RillCheckLayers.cmake
cmake_minimum_required(VERSION 3.25)
include(${GRAPH})
set(bad 0)

# Checks the includes of `file` (a path under `root`, named `where` in errors), of `layer`.
function(check_includes root file where layer)
  # (Angle brackets are other libraries' but for <rill/...>, which counts as "rill/...".)
  file(STRINGS ${root}/${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*(\"[a-z0-9_]+/|<rill/)")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([a-z0-9_]+)/.*" "\\1" target "${line}")
    if(target STREQUAL "rill")  # a public header: its owner's
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]rill/([a-z0-9_/]+)\\.hpp[\">].*" "\\1" header "${line}")
      if(NOT DEFINED OWNER_${header})
        message(SEND_ERROR "${where}: includes rill/${header}.hpp, which no layer declares (HEADERS)")
        math(EXPR bad "${bad} + 1")
      elseif(NOT OWNER_${header} IN_LIST REACH_${layer})
        message(SEND_ERROR "${where}: includes rill/${header}.hpp of layer ${OWNER_${header}}, which layer ${layer} "
                           "does not use (an upward include, or a missing USES in src/CMakeLists.txt)")
        math(EXPR bad "${bad} + 1")
      endif()
    elseif(NOT target IN_LIST REACH_${layer})
      if(target IN_LIST LAYERS)
        message(SEND_ERROR "${where}: includes ${target}/, which layer ${layer} does not use "
                           "(an upward include, or a missing USES in src/CMakeLists.txt)")
      else()
        message(SEND_ERROR "${where}: includes ${target}/, which is no layer")
      endif()
      math(EXPR bad "${bad} + 1")
    endif()
  endforeach()
  set(bad ${bad} PARENT_SCOPE)
endfunction()

file(GLOB folders RELATIVE ${SRC} ${SRC}/*)
foreach(folder IN LISTS folders)
  if(IS_DIRECTORY ${SRC}/${folder} AND NOT folder IN_LIST LAYERS)
    message(SEND_ERROR "src/${folder}/ is no layer: declare it with rill_layer in src/CMakeLists.txt")
    math(EXPR bad "${bad} + 1")
  endif()
endforeach()
foreach(layer IN LISTS LAYERS)
  file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/${layer}/*.hpp ${SRC}/${layer}/*.cpp)
  foreach(file IN LISTS files)
    check_includes(${SRC} ${file} src/${file} ${layer})
  endforeach()
endforeach()

file(GLOB_RECURSE headers RELATIVE ${INCLUDE}/rill ${INCLUDE}/rill/*.hpp)
foreach(file IN LISTS headers)
  string(REGEX REPLACE "\\.hpp$" "" header "${file}")
  if(NOT DEFINED OWNER_${header})
    message(SEND_ERROR "include/rill/${file} belongs to no layer: name it in a rill_layer's HEADERS")
    math(EXPR bad "${bad} + 1")
  else()
    check_includes(${INCLUDE} rill/${file} include/rill/${file} ${OWNER_${header}})
  endif()
endforeach()
foreach(header IN LISTS OWNED)
  if(NOT EXISTS ${INCLUDE}/rill/${header}.hpp)
    message(SEND_ERROR "layer ${OWNER_${header}} declares include/rill/${header}.hpp, which does not exist")
    math(EXPR bad "${bad} + 1")
  endif()
endforeach()

if(bad GREATER 0)
  message(FATAL_ERROR "${bad} layering error(s)")
endif()
list(LENGTH LAYERS n)
list(LENGTH OWNED h)
message(STATUS "layering: ${n} layers and ${h} public headers, every include goes to the same layer or one below it")
