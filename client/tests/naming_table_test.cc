// The C++ column of docs/CLIENT.md's naming table and its error classes.
// Each AGENTD_CLIENT_OP row names a method both Client and AsyncClient
// must have: a missing one does not compile. tests/test_client_naming_table.py
// checks this list equals the table's C++ column (cells not marked
// "to come"), so neither can drift from the other.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "agentd/client/client.h"
#include "agentd/client/error_class.h"

using namespace agentd;
using namespace agentd::client;

#define AGENTD_CLIENT_OPS(X) \
  X(Health)                  \
  X(Bootstrap)               \
  X(Reset)                   \
  X(SetToken)                \
  X(StartExec)               \
  X(PollExec)                \
  X(StartExecAndWait)        \
  X(WaitExec)                \
  X(WaitForOutput)           \
  X(WaitForPort)             \
  X(WaitForPath)             \
  X(KillExec)                \
  X(AckExec)                 \
  X(ExecEgress)              \
  X(ListExecs)               \
  X(WriteStdin)              \
  X(Stream)                  \
  X(ResizeExec)              \
  X(Run)                     \
  X(RunCode)                 \
  X(CreateContext)           \
  X(RunInContext)            \
  X(GetContext)              \
  X(ListContexts)            \
  X(ResetContext)            \
  X(DeleteContext)           \
  X(ReadFileTo)              \
  X(ReadFileToFd)            \
  X(ReadFile)                \
  X(ReadFileWithEtag)        \
  X(WriteFile)               \
  X(WriteFileFrom)           \
  X(WriteFileFromFd)         \
  X(Stat)                    \
  X(ListDir)                 \
  X(MakeDir)                 \
  X(Rename)                  \
  X(Remove)                  \
  X(Edit)                    \
  X(Realpath)                \
  X(Search)                  \
  X(Glob)                    \
  X(UploadDir)               \
  X(DownloadDir)             \
  X(Watch)                   \
  X(ListPorts)               \
  X(OpenTunnel)              \
  X(Metrics)                 \
  X(ReadOutput)

// Each names its method by a using-declaration: a missing one does not
// compile, and an overload set (AsyncClient's calls without their trailing
// arguments) counts as one method.
#define AGENTD_CLIENT_PROBE(name)             \
  struct ClientHas##name : Client {           \
    using Client::name;                       \
  };                                          \
  struct AsyncClientHas##name : AsyncClient { \
    using AsyncClient::name;                  \
  };
AGENTD_CLIENT_OPS(AGENTD_CLIENT_PROBE)
#undef AGENTD_CLIENT_PROBE

TEST_CASE("every C++ row of the naming table is a method of Client and AsyncClient",
          "[client][naming]") {
  std::vector<std::string> names;
#define AGENTD_CLIENT_OP(name) names.push_back(#name);
  AGENTD_CLIENT_OPS(AGENTD_CLIENT_OP)
#undef AGENTD_CLIENT_OP
  CHECK(names.size() == 49);
}

TEST_CASE("every error code has its error class, and an unknown code is UnknownError",
          "[client][errors]") {
  for (ErrorCode code : AllErrorCodes()) {
    INFO(ErrorCodeName(code));
    CHECK(!ErrorClassOf(code).empty());
    CHECK(ErrorClassOf(code) != "UnknownError");
    CHECK(ErrorClassOf(Status::Error(code, "x")) == ErrorClassOf(code));
  }
  CHECK(ErrorClassOf(ErrorCode::kExecIdConflict) == "ExecIdConflict");
  CHECK(ErrorClassOf(ErrorCode::kIsDirectory) == "IsADirectory");
  CHECK(ErrorClassOf(ErrorCode::kInternal) == "InternalError");
  CHECK(ErrorClassOf(Status()).empty());
  // A newer daemon's code reaches the caller by name and as UnknownError.
  Status newer =
      StatusFromErrorBody(409, R"({"error": {"code": "some_future_code", "message": "m"}})");
  CHECK(ErrorClassOf(newer) == "UnknownError");
  Status not_ours = StatusFromErrorBody(502, "<html>bad gateway</html>");
  CHECK(ErrorClassOf(not_ours) == "ProtocolError");
  CHECK(ErrorClassOf(StatusFromErrorBody(404, R"({"error": {"code": "not_found"}})")) ==
        "NotFound");
}
