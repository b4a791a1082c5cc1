#include "messages/handler_table.hpp"

#include <elf.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/demangle.hpp"
#include "messages/wire_format.hpp"

namespace rill::detail {

namespace {

struct entry {
  handler_fn fn;
  const char* name;      // mangled: part of the build's fingerprint
  std::string readable;  // demangled, for messages
  bool on_progress;      // may run on a progress thread
};

// Function-local static: safe to use from other translation units' static initialisers.
std::vector<entry>& table() {
  static std::vector<entry> t;
  return t;
}

std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// The GNU build id of the main executable (the linker's hash of its contents), or 0 if absent.
std::uint64_t executable_build_id() {
  std::uint64_t id = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) -> int {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
          const auto* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const auto* name = p + sizeof(ElfW(Nhdr));
            const auto* desc = name + ((n->n_namesz + 3) & ~3u);
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              *static_cast<std::uint64_t*>(out) = fnv1a(desc, n->n_descsz);
              return 1;
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
          }
        }
        return 1;  // only the first object (the executable) is of interest
      },
      &id);
  return id;
}

}  // namespace

std::uint32_t register_handler(handler_fn fn, const char* name, bool on_progress) {
  auto& t = table();
  if (t.size() > wire::max_handler_id) {
    std::fprintf(stderr, "rill: fatal: more than %u distinct active-message handlers\n", wire::max_handler_id);
    std::abort();
  }
  t.push_back({fn, name, demangled(name), on_progress});
  return static_cast<std::uint32_t>(t.size() - 1);
}

std::size_t handler_count() { return table().size(); }
handler_fn handler_at(std::uint16_t id) { return table()[id].fn; }
const char* handler_name(std::uint16_t id) { return table()[id].readable.c_str(); }
bool handler_on_progress(std::uint16_t id) { return table()[id].on_progress; }

std::uint64_t build_fingerprint() {
  std::uint64_t h = executable_build_id();
  h = fnv1a(&h, sizeof h);
  for (const auto& e : table()) h = fnv1a(e.name, std::strlen(e.name) + 1, h);
  return h;
}

// Any function of this binary serves as the origin of code offsets.
std::intptr_t code_offset(const void* fn) {
  return reinterpret_cast<std::intptr_t>(fn) - reinterpret_cast<std::intptr_t>(&handler_count);
}
const void* code_address(std::intptr_t offset) {
  return reinterpret_cast<const void*>(reinterpret_cast<std::intptr_t>(&handler_count) + offset);
}

}  // namespace rill::detail
