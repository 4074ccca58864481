// `uform::fail`: how every layer answers a refusal, with a status and a static message.
#ifndef UFORM_COMMON_FAIL_HPP
#define UFORM_COMMON_FAIL_HPP

#include <uform/types.h>

namespace uform {

/// Writes `text` through a nullable message out-pointer and answers `status`.
inline uform_status_t fail(char const **message, uform_status_t status, char const *text) noexcept {
    if (message) *message = text;
    return status;
}

} // namespace uform

#endif // UFORM_COMMON_FAIL_HPP
