// Staged transfers (staged_transfer.hpp): the window of pieces in the source's segment, and the
// acknowledgements that free its room for the next.
#include "data/staged_transfer.hpp"

#include <mutex>

#include "rill/am.hpp"
#include "trace/hooks.hpp"

namespace rill::detail::transfers {
namespace {

struct staged_transfer {
  staged_transfer(std::shared_ptr<const instance_record> r, std::vector<const field_placement*> f, instance from,
                  instance to, const transfer& tr, std::vector<std::vector<rect<3>>> p, event e)
      : rec(std::move(r)),
        fields(std::move(f)),
        src(from),
        dst(to),
        t(tr),
        pieces(std::move(p)),
        total(static_cast<std::uint32_t>(pieces.size())),
        done(e),
        per_point(bytes_per_point(fields)) {}

  std::shared_ptr<const instance_record> rec;
  std::vector<const field_placement*> fields;
  instance src, dst;
  transfer t;
  std::vector<std::vector<rect<3>>> pieces;
  std::uint32_t total;
  event done;
  std::size_t per_point;
  std::mutex lock;
  std::size_t next = 0;                   // the first piece not yet sent, under lock
  std::size_t in_flight = 0;              // pieces staged and not acknowledged, under lock
  std::shared_ptr<staged_transfer> self;  // while in_flight > 0, under lock
};

void read_staged_piece(instance dst, const transfer& t, const std::vector<rect<3>>& rects, std::uint32_t total,
                       event done, int from, std::uintptr_t at, std::uint64_t bytes, std::uint8_t tag,
                       std::uintptr_t state);

// Stages (or, without room, sends) pieces until the window is full or none is left.
void stage_more(const std::shared_ptr<staged_transfer>& s) {
  data_module& here = data_here(s->t.what());
  for (;;) {
    std::size_t i = 0;
    {
      std::lock_guard g(s->lock);
      if (s->next == s->pieces.size()) return;
      i = s->next;
    }
    const std::vector<rect<3>>& piece = s->pieces[i];
    const std::size_t size = points_in(piece) * s->per_point;
    const segment::allocation room = here.stage(size);
    {
      std::lock_guard g(s->lock);
      if (s->next != i || (!room.at && s->in_flight > 0)) {
        // Another thread took this piece, or the window is full: an acknowledgement goes on.
        if (room.at) here.unstage(room.at, room.tag, size);
        if (s->next != i) continue;
        return;
      }
      s->next = i + 1;
      if (room.at && s->in_flight++ == 0) s->self = s;
    }
    if (!room.at) {
      send_piece(s->rec, s->fields, s->src, s->dst, s->t, piece, s->total, s->done);
      continue;
    }
    const std::uint64_t start = trace::span_begin();
    pack(storage_of(*s->rec), s->fields, piece, static_cast<std::byte*>(room.at));
    end_transfer_span(start, s->t, size, s->dst.owner());
    am::send(
        s->dst.owner(),
        [](instance d, const transfer& tr, const std::vector<rect<3>>& rs, std::uint32_t n, event e, int from,
           std::uintptr_t at, std::uint64_t bytes, std::uint8_t tag,
           std::uintptr_t state) { read_staged_piece(d, tr, rs, n, e, from, at, bytes, tag, state); },
        s->dst, s->t, piece, s->total, s->done, s->src.owner(), reinterpret_cast<std::uintptr_t>(room.at),
        static_cast<std::uint64_t>(size), room.tag, reinterpret_cast<std::uintptr_t>(s.get()));
    // Now, not when this loop ends: the destination unpacks this piece while the next is packed.
    am::flush();
  }
}

// At the source's rank: the destination has read a staged piece.
void staged_piece_read(std::uintptr_t state, std::uintptr_t at, std::uint8_t tag, std::uint64_t bytes) {
  auto* raw = reinterpret_cast<staged_transfer*>(state);
  std::shared_ptr<staged_transfer> s;
  {
    std::lock_guard g(raw->lock);
    s = raw->self;  // alive: this piece was in flight
    if (--raw->in_flight == 0) raw->self.reset();
  }
  data_here(s->t.what()).unstage(reinterpret_cast<void*>(at), tag, static_cast<std::size_t>(bytes));
  stage_more(s);
}

// At the destination's rank: a piece rank `from` staged in its segment at `at`.
void read_staged_piece(instance dst, const transfer& t, const std::vector<rect<3>>& rects, std::uint32_t total,
                       event done, int from, std::uintptr_t at, std::uint64_t bytes, std::uint8_t tag,
                       std::uintptr_t state) {
  data_module& here = data_here(t.what());
  const std::byte* in = nullptr;
  try {
    in = here.staged_at(from, at, static_cast<std::size_t>(bytes));
  } catch (const misuse_error& e) {
    count_piece(here, t, total, done, e.what());
  }
  if (in) receive_piece(dst, t, rects, total, done, from, std::span(in, static_cast<std::size_t>(bytes)));
  am::send(
      from,
      [](std::uintptr_t st, std::uintptr_t a, std::uint8_t tg, std::uint64_t b) { staged_piece_read(st, a, tg, b); },
      state, at, tag, bytes);
}

}  // namespace

void stage_pieces(std::shared_ptr<const instance_record> rec, std::vector<const field_placement*> fields, instance src,
                  instance dst, const transfer& t, std::vector<std::vector<rect<3>>> pieces, event done) {
  stage_more(
      std::make_shared<staged_transfer>(std::move(rec), std::move(fields), src, dst, t, std::move(pieces), done));
}

}  // namespace rill::detail::transfers
