// ErrorClassOf: the error class name of a failure (docs/CLIENT.md, "Error
// classes"), the same name the Python and TypeScript clients raise, so a
// harness written against one client reads the same in another.
#pragma once

#include <string_view>

#include "agentd/protocol/status.h"

namespace agentd::client {

// The class for an error code's failures; "" for kOk.
std::string_view ErrorClassOf(ErrorCode code);
// The class of a failed call's Status: the class of its code, or
// "UnknownError" for a code this client does not know (a newer daemon's:
// the Status then carries kProtocolError and the code as sent in
// details()["code"]). "" for an ok Status.
std::string_view ErrorClassOf(const Status& status);

}  // namespace agentd::client
