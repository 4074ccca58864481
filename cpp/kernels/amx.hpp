// Whether this process may run AMX tiles: the CPU has them and the OS granted their state.
#pragma once

namespace uform::ram {

/// Whether AMX BF16 and INT8 tiles can run here: the CPU has them and the OS granted the process the tile state
/// (asked for once, by the first call).
bool amx_available() noexcept;

} // namespace uform::ram
