#include "api/exec_api.h"

#include <charconv>

#include "api/routes.h"

namespace agentd {

Result<std::optional<uint64_t>> QueryNumber(const Request& req, std::string_view name, uint64_t min,
                                            uint64_t max) {
  const std::string* text = req.Query(name);
  if (!text) return std::optional<uint64_t>();
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size() || n < min ||
      n > max) {
    return Status::InvalidRequest("query parameter \"" + std::string(name) +
                                  "\" must be an integer from " + std::to_string(min) + " to " +
                                  std::to_string(max))
        .With("field", std::string(name))
        .With("min", min)
        .With("max", max);
  }
  return std::optional<uint64_t>(n);
}

Result<bool> QueryFlag(const Request& req, std::string_view name) {
  const std::string* text = req.Query(name);
  if (!text || *text == "0") return false;
  if (*text == "1") return true;
  return Status::InvalidRequest("query parameter \"" + std::string(name) + "\" must be 0 or 1")
      .With("field", std::string(name));
}

Result<std::optional<std::string>> QueryChoice(const Request& req, std::string_view name,
                                               std::initializer_list<std::string_view> choices) {
  const std::string* text = req.Query(name);
  if (!text) return std::optional<std::string>();
  std::string listed;
  for (std::string_view choice : choices) {
    if (*text == choice) return std::optional<std::string>(*text);
    listed += (listed.empty() ? "" : ", ") + std::string(choice);
  }
  return Status::InvalidRequest("query parameter \"" + std::string(name) + "\" must be one of " +
                                listed)
      .With("field", std::string(name));
}

Status CheckCursor(std::string_view field, uint64_t cursor, const OutputLog& log) {
  if (cursor <= log.next()) return Status::Ok();
  return Status::InvalidRequest(std::string(field) + " " + std::to_string(cursor) +
                                " is past the end of the stream (" + std::to_string(log.next()) +
                                " bytes)")
      .With("field", std::string(field))
      .With("next", log.next());
}

void RegisterExecRoutes(Router& router, ApiContext& ctx, ExecEngine& engine) {
  ctx.exec_counts = [&engine] {
    ExecTotals t = engine.Totals();
    return ExecCounts{t.busy, t.records};
  };
  RegisterExecStartRoutes(router, engine);
  RegisterExecPollRoutes(router, engine);
  RegisterExecOutputRoutes(router, engine);
  RegisterExecEventRoutes(router, engine);
  RegisterExecControlRoutes(router, engine);
}

}  // namespace agentd
