#include "proc/listening_ports.h"

#include <catch2/catch.hpp>

using namespace agentd;

TEST_CASE("listening ports are read from the kernel's tcp tables", "[ports]") {
  std::string v4 =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0\n"
      "   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0\n"
      "   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000 0\n"
      "   3: garbage\n";
  std::vector<ListeningPort> ports = ParseProcNetTcp(v4, "ipv4");
  REQUIRE(ports.size() == 2);  // the established connection and the garbage are not
  CHECK(ports[0].port == 8080);
  CHECK(ports[0].address == "127.0.0.1");
  CHECK(ports[0].family == "ipv4");
  CHECK(ports[1].port == 22);
  CHECK(ports[1].address == "0.0.0.0");

  std::string v6 =
      "  sl  local_address                         remote_address                        st\n"
      "   0: 00000000000000000000000001000000:0BB8 00000000000000000000000000000000:0000 0A\n"
      "   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A\n";
  ports = ParseProcNetTcp(v6, "ipv6");
  REQUIRE(ports.size() == 2);
  CHECK(ports[0].port == 3000);
  CHECK(ports[0].address == "::1");
  CHECK(ports[1].port == 80);
  CHECK(ports[1].address == "::");
}
