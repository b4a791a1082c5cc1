// Mapping memory of a shared mapping before its first use.
#pragma once

#include <cstddef>

namespace rill::detail {

// Maps every page of [p, p + bytes) of a shared, writable mapping into this process now, writable,
// without changing a byte (a locked add of zero per page, safe beside another process's writes):
// each page's first access then costs nothing later, on a path that is timed (a node ring's first
// pass through its memory).
void populate_pages(std::byte* p, std::size_t bytes);

}  // namespace rill::detail
