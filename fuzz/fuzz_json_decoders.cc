// Every JSON decoder of the protocol, request and response side: any bytes
// through the strict parser, then each decoder on whatever parsed. A
// decoded start request must also serialize and fingerprint.
#include <cstdint>
#include <string_view>

#include "agentd/protocol/bootstrap.h"
#include "agentd/protocol/exec.h"
#include "agentd/protocol/fs.h"
#include "agentd/protocol/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agentd;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<json::Value> doc = json::Parse(text);
  if (!doc.ok()) return 0;
  (void)json::Serialize(*doc);
  (void)DecodeBootstrapRequest(*doc);
  (void)DecodeBootstrapResponse(*doc);
  (void)DecodeHealthResponse(*doc);
  if (Result<ExecStartRequest> start = DecodeExecStartRequest(*doc); start.ok()) {
    (void)start->EffectiveArgv();
    (void)ExecFingerprint(*start);
  }
  (void)DecodeExecInfo(*doc);
  (void)DecodeExecPollResponse(*doc);
  (void)DecodeExecList(*doc);
  (void)DecodeKillRequest(*doc);
  (void)DecodeResizeRequest(*doc);
  (void)DecodeStdinResponse(*doc);
  (void)DecodeFileStat(*doc);
  (void)DecodeListResponse(*doc);
  (void)DecodeMkdirRequest(*doc);
  (void)DecodeRenameRequest(*doc);
  (void)DecodeDeleteResponse(*doc);
  (void)DecodeRealpathResponse(*doc);
  (void)DecodeTarUploadResponse(*doc);
  return 0;
}
