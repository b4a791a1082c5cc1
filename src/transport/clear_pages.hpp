// Making memory of a shared mapping read as zeroes without committing it.
#pragma once

#include <cstddef>

namespace rill::detail {

// [p, p + bytes) of a shared mapping reads as zeroes afterwards: the whole pages in it go back to
// the OS and are committed again only as they are touched. Where the mapping does not allow that,
// they are zeroed (and committed).
void clear_pages(std::byte* p, std::size_t bytes);

}  // namespace rill::detail
