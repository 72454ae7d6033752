// Route registration, one function per route group (one file each).
#pragma once

#include "api/api_context.h"
#include "server/router.h"

namespace agentd {

void RegisterBootstrapRoutes(Router& router, ApiContext& ctx);
void RegisterHealthRoutes(Router& router, ApiContext& ctx);

}  // namespace agentd
