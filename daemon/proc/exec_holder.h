// The exec holder (docs/OPERATIONS.md, "Surviving a crash"): a small
// process per exec that is the command's parent, so the command outlives a
// daemon killed with SIGKILL.
//
// Spawn() (proc/spawn.h) clones the holder with CLONE_VM and without
// CLONE_VFORK: it shares the daemon's memory (no copy, no execve, so an
// exec starts about as fast as before) but is a process of its own, which a
// signal to the daemon does not kill. The holder spawns the command (the
// usual spawn child, so every limit and restriction applies as before),
// binds <state-dir>/h/<command pid>.sock, and wakes the daemon. From then
// on it runs only raw system calls on its own stack (the daemon goes on
// using that memory, libc state included): it keeps duplicates of the
// read ends of the command's stdout and stderr pipes (the command never
// meets a pipe without a reader, so never SIGPIPE; while no daemon reads,
// it blocks once the pipe buffer, 256 KiB or 1 MiB, is full), waits for the command
// with WNOWAIT (the exit status stays in the kernel and the command's pid
// and process group cannot be reused before a daemon has recorded it), and
// reports over its connection to the daemon: the exit status and time.
//
// A connection that closes (the daemon died) sends the holder back to its
// socket; a restarted daemon connects and gets a report with the pipes'
// read ends attached (SCM_RIGHTS), then pumps them into the spool files
// from their real size on. The daemon ends a holder by writing 'A' once
// the exec's output is complete and its record written: the holder reaps
// the command, removes its socket and exits; 'Q' (an exec the new daemon
// has no record of: it died before writing it) kills the command first.
//
// Streamed stdin (not a PTY's) goes through the holder too, so that how
// many bytes the command was given survives the daemon: the daemon writes
// into a relay pipe whose both ends the holder keeps, and the holder
// splices it on into the command's stdin pipe, whose write end only it
// holds. The kernel is the counter: every byte a daemon's write() took is
// either spliced (counted by the holder) or still in the relay pipe
// (FIONREAD), so the count a restarted daemon is told is exactly what the
// dead one answered as `next`, and it gets the relay's write end back.
// 'E' from the daemon is the end of input: the holder passes on what the
// relay holds, then closes the command's stdin.
//
// A PTY exec's holder keeps the terminal's master and moves both ways
// through a buffer on its stack (a terminal cannot be spliced on every
// kernel): input from the relay pipe into the master, counted as above
// plus what waits in the buffer; output from the master into a pipe whose
// read end the daemon splices into the spool as for a pipe exec, so a
// byte read from the master is in the holder's buffer, the pipe or the
// spool file, never only in a dead daemon. Its reports carry kMagicPty
// and the master in stderr's place, which a restarted daemon keeps for
// resize (TIOCSWINSZ). While no daemon reads, the holder stops reading
// the master once the pipe is full, and the command blocks on its
// terminal as it would on a full pipe.
//
// Stdin given whole at the start ("stdin", "stdin_b64") is the holder's
// too: the daemon puts it in a memfd before the spawn, and the holder
// splices it on into the command's stdin pipe from its own offset, then
// closes that pipe. Nothing of it lives only in a daemon, so a kill of the
// daemon mid-input loses and repeats no byte; its reports carry no stdin
// count (kStdinNone: the stdin route is for streamed input only).
//
// An exec with "disk_bytes" also leaves its scratch tmpfs's descriptor
// (a directory, so told apart from the pipes) with the holder, attached
// last: a restarted daemon still sees the tmpfs fill.
//
// A context's interpreter (run/code_context.h) runs under a holder too,
// which keeps a duplicate of the daemon's end of the context's channel (a
// socket, so told apart from the pipes; attached before the tmpfs). The
// holder never reads it: it only keeps the channel open, so the
// interpreter does not meet its end of input when the daemon dies, and
// hands it to a restarted daemon, which talks on with the interpreter as
// if nothing happened (the interpreter never notices).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace agentd {

// What a holder sends: once per connection on a daemon's connect (with the
// pipes attached), and when the command exits.
struct HolderReport {
  static constexpr uint32_t kMagic = 0x31484741;  // "AGH1"
  // A PTY exec's holder: the same report, whose second descriptor is the
  // terminal's master (no stderr). A daemon from before PTY holders knows
  // no such magic and gives the exec up rather than pump the master.
  static constexpr uint32_t kMagicPty = 0x31504741;  // "AGP1"
  uint32_t magic = kMagic;
  int32_t pid = 0;          // the command
  int32_t exited = 0;       // 1: wait_status and ended_unix_ms are set
  int32_t wait_status = 0;  // as waitpid() reports it
  int64_t ended_unix_ms = 0;
  // Descriptors attached: stdout's read end, stderr's (a PTY's master),
  // the relay's write end, a context's channel, the scratch tmpfs.
  int32_t fds = 0;
  // kStdinNone: no stdin through this holder (the only value on exit
  // reports). Otherwise a connect report is followed by a HolderStdin.
  int32_t stdin_state = 0;
  static constexpr int32_t kStdinNone = 0;
  static constexpr int32_t kStdinOpen = 1;    // the relay's write end is attached
  static constexpr int32_t kStdinClosed = 2;  // eof given, or the command stopped reading
};

struct HolderStdin {
  uint64_t next = 0;  // bytes daemons wrote into the relay: spliced on, or still in it
};

// The holder's descriptors (numbers in its own table; -1: none).
struct HolderFds {
  pid_t command = 0;
  int listen = -1;  // <state-dir>/h/<pid>.sock, for a restarted daemon
  int conn = -1;    // the spawning daemon's connection
  int out = -1;     // read ends kept
  int err = -1;
  int in = -1;                 // the command's stdin pipe (write end), streamed stdin only
  int in_relay = -1;           // the relay pipe's read end
  int in_keep = -1;            // the relay pipe's write end, handed to a restarted daemon
  int in_data = -1;            // whole stdin: a memfd of it, passed on into `in` (no relay)
  uint64_t in_size = 0;        // and its size
  int scratch = -1;            // the exec's scratch tmpfs ("disk_bytes"), kept
  int pty = -1;                // a PTY exec: the master, output read from it (`in` is its dup)
  int pty_out = -1;            // and the write end of the pipe `out` reads
  int channel = -1;            // a context's: the daemon's end of its channel, kept
  char socket_path[108] = {};  // removed when the holder ends
};

// Sets *ready and wakes the daemon waiting on it (a futex), raw.
void HolderWake(int* ready);

// Runs the holder until a daemon ended it. Only raw system calls.
[[noreturn]] void RunHolder(HolderFds fds);

inline bool IsHolderReport(const HolderReport& r) {
  return r.magic == HolderReport::kMagic || r.magic == HolderReport::kMagicPty;
}

// The daemon's side of the first report on a fresh connection: reads it
// with its descriptors (at most 4, close-on-exec) and, when the holder
// relays stdin, `*in`. False on anything short.
bool ReceiveHolderReport(int sock, HolderReport* report, HolderStdin* in, int fds_out[4]);

}  // namespace agentd
