// ExecId: an exec id that passed ValidateExecId (docs/PROTOCOL.md, "Exec
// ids"). The start route parses the id once; the engine takes the checked
// type and never validates it again. Ids the engine mints itself (runs)
// are valid by construction.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "agentd/protocol/exec.h"
#include "agentd/protocol/status.h"

namespace agentd {

class ExecId {
 public:
  static Result<ExecId> Parse(std::string_view id) {
    AGENTD_RETURN_IF_ERROR(ValidateExecId(id));
    return ExecId(std::string(id));
  }

  const std::string& str() const { return id_; }

 private:
  friend class ExecEngine;  // mints run ids
  explicit ExecId(std::string id) : id_(std::move(id)) {}

  std::string id_;
};

}  // namespace agentd
