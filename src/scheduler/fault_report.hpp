// What a worker's crash means, said before the process dies: a fault in a fiber's guard page is
// a task that overflowed its stack (--rill:stack); any other fault while a message's handler
// runs is most likely a pointer or reference captured on the sending rank, which means nothing
// on this one (it worked on the local transport, where ranks share an address space). Both print
// one line naming the rank, the handler and the sender, and exit with code 3. Other faults go to
// the handler that was installed before (MPI's, or the default action: a core dump where enabled). Sanitizer builds
// keep the sanitizer's own report instead.
#pragma once

#include <cstdint>

namespace rill::detail {

// Once per process, before workers start and after MPI_Init (whose own handler, like any that
// was there, still reports the faults this one does not explain).
void install_fault_report();
// On each worker thread as it starts: an alternate signal stack (the handler cannot run on a
// stack that overflowed) and the rank to name.
void prepare_fault_report(int rank);
// How the report names handler `id` (set by the messages layer; async-signal-safe: it returns a
// string that lives as long as the program).
void set_fault_handler_names(const char* (*name_of)(std::uint16_t id));
// Handler `id`'s name as the reports give it ("?" before the messages layer set the names).
const char* reported_handler_name(std::uint16_t id);

}  // namespace rill::detail
