// The daemon's terminate handler, in place of libstdc++'s verbose one.
//
// libstdc++ starts with __gnu_cxx::__verbose_terminate_handler installed,
// which demangles the exception's type name: that links the whole C++
// demangler (cp-demangle.o, 47 KB) into the static daemon for a message
// that should never be printed (docs/BUILDING.md, "Binary size"). The
// handler is libstdc++'s variable __cxxabiv1::__terminate_handler, alone
// in its archive member (eh_term_handler.o): defined here, in an object of
// the executable itself, the linker never takes that member, nor the
// verbose handler and the demangler it names. std::set_terminate and
// std::get_terminate work on this variable as on libstdc++'s.
//
// What it prints is the verbose handler's message, with the type's
// mangled name (`c++filt -t` reads it), and it aborts as that one does.
#include <unistd.h>

#include <cxxabi.h>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <typeinfo>

namespace agentd {
namespace {

void WriteToStderr(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

[[noreturn]] void TerminateWithMessage() {
  // A second terminate (from what() itself, say) aborts at once, as the
  // verbose handler does.
  static bool terminating = false;
  if (terminating) {
    WriteToStderr("terminate called recursively\n");
    std::abort();
  }
  terminating = true;
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) {
    WriteToStderr("terminate called without an active exception\n");
    std::abort();
  }
  WriteToStderr("terminate called after throwing an instance of '");
  WriteToStderr(type->name());
  WriteToStderr("'\n");
  try {
    throw;
  } catch (const std::exception& e) {
    WriteToStderr("  what():  ");
    WriteToStderr(e.what());
    WriteToStderr("\n");
  } catch (...) {
  }
  std::abort();
}

}  // namespace
}  // namespace agentd

// libstdc++'s declaration is internal (unwind-cxx.h); the type is
// std::terminate_handler there too.
namespace __cxxabiv1 {
extern std::terminate_handler __terminate_handler;
std::terminate_handler __terminate_handler = agentd::TerminateWithMessage;
}  // namespace __cxxabiv1
