#include "fs/byte_channel.h"

#include <catch2/catch.hpp>
#include <thread>

using namespace agentd;

namespace {

// Runs `producer` as a coroutine on a fresh io_context while `consumer`
// runs on a thread of its own.
template <typename Producer, typename Consumer>
void Run(size_t capacity, Producer producer, Consumer consumer) {
  asio::io_context io;
  auto ch = std::make_shared<ByteChannel>(io.get_executor(), capacity);
  std::thread worker([&] { consumer(*ch); });
  asio::co_spawn(io, producer(*ch), asio::detached);
  io.run();
  worker.join();
}

}  // namespace

TEST_CASE("bytes pushed by a coroutine reach a thread in order, then the end", "[channel]") {
  std::string received;
  bool clean_end = false;
  Run(
      1000,
      [](ByteChannel& ch) -> asio::awaitable<void> {
        for (int i = 0; i < 200; ++i) {
          std::string chunk(100, static_cast<char>('a' + i % 26));
          bool ok = co_await ch.AsyncPush(chunk);
          REQUIRE(ok);
        }
        ch.Finish();
      },
      [&](ByteChannel& ch) {
        while (std::optional<std::string> c = ch.Pop()) received += *c;
        clean_end = !ch.closed();
      });
  CHECK(received.size() == 20000);
  CHECK(received.substr(100, 3) == "bbb");
  CHECK(clean_end);
}

TEST_CASE("a thread that gives up stops the coroutine's pushes", "[channel]") {
  int pushed = 0;
  Run(
      300,
      [&](ByteChannel& ch) -> asio::awaitable<void> {
        std::string chunk(100, 'x');
        while (co_await ch.AsyncPush(chunk)) ++pushed;
      },
      [](ByteChannel& ch) {
        for (int i = 0; i < 5; ++i) REQUIRE(ch.Pop());
        ch.Close();
      });
  // Bounded: at most the five taken plus what fits in the queue.
  CHECK(pushed >= 5);
  CHECK(pushed <= 5 + 3 + 1);
}

TEST_CASE("bytes pushed by a thread reach a coroutine; a close is not a clean end", "[channel]") {
  std::string received;
  bool closed = false;
  Run(
      256,
      [&](ByteChannel& ch) -> asio::awaitable<void> {
        while (std::optional<std::string> c = co_await ch.AsyncPop()) received += *c;
        closed = ch.closed();
      },
      [](ByteChannel& ch) {
        for (int i = 0; i < 50; ++i) REQUIRE(ch.Push(std::string(64, 'y')));
        ch.Close();
      });
  CHECK(received.size() <= 50 * 64);
  CHECK(closed);
}

TEST_CASE("the registry closes every live channel at shutdown", "[channel]") {
  asio::io_context io;
  ChannelRegistry registry;
  auto a = registry.Make(io.get_executor(), 10);
  registry.CloseAll();
  CHECK(a->closed());
  CHECK_FALSE(a->Push("late"));
  CHECK(registry.Make(io.get_executor(), 10)->closed());
}

TEST_CASE("a buffer the consumer recycles is the producer's next block, at its size", "[channel]") {
  asio::io_context io;
  auto ch = std::make_shared<ByteChannel>(io.get_executor(), 1000);
  CHECK(ch->TakeSpare().capacity() < 400);  // none yet: a fresh string
  std::string used;
  used.reserve(400);
  used = "written";
  const char* memory = used.data();
  ch->Recycle(std::move(used));
  std::string spare = ch->TakeSpare();
  CHECK(spare.data() == memory);  // the same allocation, not a new one
  CHECK(spare == "written");      // as handed back: a refill overwrites it
  CHECK(spare.capacity() >= 400);
  CHECK(ch->TakeSpare().capacity() < 400);  // handed out once
}

TEST_CASE("recycled buffers are kept only up to four times the channel's capacity", "[channel]") {
  asio::io_context io;
  auto ch = std::make_shared<ByteChannel>(io.get_executor(), 1000);
  for (int i = 0; i < 11; ++i) {
    std::string used;
    used.reserve(400);
    ch->Recycle(std::move(used));
  }
  int kept = 0;
  while (ch->TakeSpare().capacity() >= 400) ++kept;
  CHECK(kept == 10);  // an eleventh would hold 4400 bytes for a 1000-byte channel
  ch->Close();
  std::string late;
  late.reserve(400);
  ch->Recycle(std::move(late));
  CHECK(ch->TakeSpare().capacity() < 400);  // a closed channel keeps nothing
}
