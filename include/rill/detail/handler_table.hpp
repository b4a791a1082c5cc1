// The table of active-message handlers, filled during static initialisation.
//
// Every distinct (callable type, argument types) pair that a program ever sends instantiates one
// handler type; its id is its position in this table. Static initialisers of one binary run in the
// same order in every process, so ids agree across ranks; start-up compares a hash of the table
// (and of the binary's build id) between ranks to make sure that holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <typeinfo>

namespace rill::detail {

// A handler decodes its payload and runs the user's callable. It may throw decode_error.
using handler_fn = void (*)(const std::byte* payload, std::size_t bytes);

// Appends a handler and returns its id. Called only during static initialisation. A handler
// `on_progress` may run on the receiving rank's progress thread (--rill:progress=thread): it does
// not wait, and it is safe beside the rank's running tasks (rill::am::send_inline).
std::uint32_t register_handler(handler_fn fn, const char* name, bool on_progress);

template <class H>
constexpr bool runs_on_progress() {
  if constexpr (requires { H::on_progress; })
    return H::on_progress;
  else
    return false;
}

template <class H>
struct handler_id {
  static inline const std::uint32_t value = register_handler(&H::invoke, typeid(H).name(), runs_on_progress<H>());
};

// Function pointers cannot travel as addresses (each process maps the binary elsewhere), so they
// travel as offsets from a function inside Rill; valid because all ranks run the same binary.
std::intptr_t code_offset(const void* fn);
const void* code_address(std::intptr_t offset);

}  // namespace rill::detail
