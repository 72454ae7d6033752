/* Baselines for the exec benchmarks: fork + execve("/bin/true") + waitpid
 * in a plain C loop.
 *
 *   fork_exec_baseline [N]               N round trips one after another;
 *                                        prints each latency in microseconds,
 *                                        one per line
 *   fork_exec_baseline N --concurrent    forks all N children (each execs
 *                                        /bin/true) before waiting for any,
 *                                        then reaps them all; prints the
 *                                        total in microseconds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char* const child_argv[] = {"/bin/true", NULL};
static char* const child_env[] = {NULL};

static double micros_since(const struct timespec* t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) * 1e6 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e3;
}

static pid_t spawn_true(void) {
  pid_t pid = fork();
  if (pid == 0) {
    execve("/bin/true", child_argv, child_env);
    _exit(127);
  }
  return pid;
}

static int concurrent(int n) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < n; ++i) {
    if (spawn_true() < 0) return 1;
  }
  int status;
  for (int i = 0; i < n; ++i) {
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  printf("%.1f\n", micros_since(&t0));
  return 0;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  if (argc > 2 && strcmp(argv[2], "--concurrent") == 0) return concurrent(n);
  for (int i = 0; i < n; ++i) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = spawn_true();
    if (pid < 0) return 1;
    int status;
    waitpid(pid, &status, 0);
    printf("%.1f\n", micros_since(&t0));
  }
  return 0;
}
