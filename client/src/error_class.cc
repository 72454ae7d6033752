#include "agentd/client/error_class.h"

namespace agentd::client {

std::string_view ErrorClassOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "";
#define AGENTD_ERROR_CLASS(name, cls) \
  case ErrorCode::name:               \
    return cls;
#include "agentd/client/error_classes.def"
#undef AGENTD_ERROR_CLASS
  }
  return "UnknownError";
}

std::string_view ErrorClassOf(const Status& status) {
  if (status.code() == ErrorCode::kProtocolError) {
    // StatusFromErrorBody keeps a code it does not know in the details.
    const json::Value* sent = status.details().Find("code");
    if (sent && sent->is_string() && sent->as_string() != ErrorCodeName(status.code())) {
      return "UnknownError";
    }
  }
  return ErrorClassOf(status.code());
}

}  // namespace agentd::client
