// Moving and destroying the objects of opaque fields (opaque_elements.hpp). Every call into the
// program's serdes is guarded: what it throws becomes a rill::misuse_error that poisons the copy.
#include "data/opaque_elements.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>

#include "common/log.hpp"
#include "data/data_module.hpp"
#include "data/field_rows.hpp"
#include "rill/error.hpp"

namespace rill::detail {
namespace {

void* object_at(const std::byte* at) {
  void* p = nullptr;
  std::memcpy(&p, at, sizeof p);
  return p;
}
void set_object(std::byte* at, void* p) { std::memcpy(at, &p, sizeof p); }

template <class F>
auto guarded(const char* doing, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const misuse_error&) {
    throw;
  } catch (const std::exception& e) {
    throw misuse_error(fmt::format("rill::copy: an opaque field's {} threw: {}", doing, e.what()));
  } catch (...) {
    throw misuse_error(fmt::format("rill::copy: an opaque field's {} threw", doing));
  }
}

std::size_t size_of(opaque_entry e, void* object) {
  return guarded("size", [&] { return e(opaque_verb::size, object, nullptr, 0); });
}

void* make(opaque_entry e, const std::byte* bytes, std::size_t n) {
  void* made = nullptr;
  guarded("deserialize", [&] { return e(opaque_verb::deserialize, made, const_cast<std::byte*>(bytes), n); });
  return made;
}

}  // namespace

void destroy_object(opaque_entry e, void* object) {
  if (!object) return;
  guarded("destroy", [&] { return e(opaque_verb::destroy, object, nullptr, 0); });
}

opaque_entry entry_of(const field_placement& f) {
  return reinterpret_cast<opaque_entry>(const_cast<void*>(code_address(f.opaque)));
}

std::size_t deep_copy(opaque_entry e, std::byte* to, const std::byte* from) {
  void* source = object_at(from);
  void* made = nullptr;
  std::size_t n = 0;
  if (source) {
    n = size_of(e, source);
    std::vector<std::byte> bytes(n);
    guarded("serialize", [&] { return e(opaque_verb::serialize, source, bytes.data(), n); });
    made = make(e, bytes.data(), n);
  }
  void* old = object_at(to);
  set_object(to, made);
  destroy_object(e, old);
  return n;
}

std::size_t deep_copy_row(opaque_entry e, std::byte* to, std::ptrdiff_t to_step, const std::byte* from,
                          std::ptrdiff_t from_step, std::size_t count) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i, to += to_step, from += from_step) n += deep_copy(e, to, from);
  return n;
}

std::size_t serialized_size(opaque_entry e, const std::byte* from, std::ptrdiff_t step, std::size_t count) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i, from += step) {
    n += sizeof(std::uint64_t);
    if (void* o = object_at(from)) n += size_of(e, o);
  }
  return n;
}

void serialize_row(opaque_entry e, const std::byte* from, std::ptrdiff_t step, std::size_t count,
                   std::vector<std::byte>& out) {
  for (std::size_t i = 0; i < count; ++i, from += step) {
    void* o = object_at(from);
    const std::uint64_t n = o ? size_of(e, o) : null_element;
    const std::size_t at = out.size();
    out.resize(at + sizeof n + (o ? n : 0));
    std::memcpy(out.data() + at, &n, sizeof n);
    if (o) guarded("serialize", [&] { return e(opaque_verb::serialize, o, out.data() + at + sizeof n, n); });
  }
}

const std::byte* deserialize_row(opaque_entry e, std::byte* to, std::ptrdiff_t step, std::size_t count,
                                 const std::byte* in, const std::byte* end) {
  for (std::size_t i = 0; i < count; ++i, to += step) {
    std::uint64_t n = 0;
    if (end - in < static_cast<std::ptrdiff_t>(sizeof n))
      throw misuse_error("rill::copy: serialized opaque objects end in the middle of an element");
    std::memcpy(&n, in, sizeof n);
    in += sizeof n;
    void* made = nullptr;
    if (n != null_element) {
      if (static_cast<std::uint64_t>(end - in) < n)
        throw misuse_error(fmt::format("rill::copy: a serialized opaque object of {} bytes has only {}", n, end - in));
      made = make(e, in, static_cast<std::size_t>(n));
      in += n;
    }
    void* old = object_at(to);
    set_object(to, made);
    destroy_object(e, old);
  }
  return in;
}

object_row::~object_row() {
  if (!owner_) return;
  for (std::size_t at = 0; at < bytes_.size(); at += sizeof(void*)) try {
      destroy_object(owner_, object_at(bytes_.data() + at));
    } catch (const misuse_error& x) {
      log().error("{}", x.what());  // (a copy failed already; this is a second error, during its unwinding)
    }
}

void destroy_objects(const instance_record& rec) {
  const storage s = storage_of(rec);
  for (const field_placement& f : rec.placement.fields) {
    if (!f.opaque) continue;
    const opaque_entry e = entry_of(f);
    for (const rect<3>& r : rec.space.rects())
      for_each_row_start(r, [&](const point<3>& p) {
        std::byte* at = field_at(s, f, p);
        for (std::size_t k = 0, n = row_length(r); k < n; ++k, at += f.strides[0]) {
          void* o = object_at(at);
          set_object(at, nullptr);
          try {
            destroy_object(e, o);
          } catch (const misuse_error& x) {
            // The instance goes anyway, and nobody waits on its last holder letting go: said here.
            log().error("instance {:#x}, field {}: {}", rec.handle.id(), f.id, x.what());
          }
        }
      });
  }
}

}  // namespace rill::detail
