#include "agentd/client/client.h"

namespace agentd::client {

Client::Client(ClientOptions options) : async_(io_.get_executor(), std::move(options)) {}

Client::~Client() = default;

}  // namespace agentd::client
