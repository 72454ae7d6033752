#include "agentd/client/client.h"

#include "transport.h"

namespace agentd::client {

Client::Client(ClientOptions options) : async_(io_.get_executor(), std::move(options)) {
  // Each call runs io_ on the caller's thread until it completes: an answer
  // it waits for alone is waited for in poll(2), not through the reactor.
  async_.transport().set_blocking_waits(true);
}

Client::~Client() = default;

}  // namespace agentd::client
