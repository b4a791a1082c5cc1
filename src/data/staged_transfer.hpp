// Pieces of a transfer staged in the source rank's segment for a node neighbour to read
// (staged_transfer.cpp), where a message would cost both ranks a copy more.
#pragma once
#include <memory>
#include <vector>

#include "data/transfer.hpp"

namespace rill::detail::transfers {

// A transfer to a rank that cannot address the destination's storage but maps this rank's
// segment (a node neighbour's system memory): its pieces are packed into room staged in the
// segment, a window at a time (data_module::staging_budget), and the destination's rank unpacks
// each from there and acknowledges it, which frees the room for the next. Each rank makes one
// copy and the two overlap, where a message would leave both the transport's copy and the
// unpacking to the destination. A piece that finds no room while none of the transfer's is
// staged goes as a message instead. Acknowledgements come back to this process and carry the
// state's address; while pieces are staged the state keeps itself alive (`self`).
//
// Called at the source's rank; `done` triggers at the destination's rank with the last piece.
void stage_pieces(std::shared_ptr<const instance_record> rec, std::vector<const field_placement*> fields, instance src,
                  instance dst, const transfer& t, std::vector<std::vector<rect<3>>> pieces, event done);

}  // namespace rill::detail::transfers
