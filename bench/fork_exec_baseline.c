/* Baseline for the exec round trip: fork + execve("/bin/true") + waitpid
 * in a plain C loop, N times. Prints each latency in microseconds, one per
 * line. Usage: fork_exec_baseline [N] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  char* const child_argv[] = {"/bin/true", NULL};
  char* const child_env[] = {NULL};
  for (int i = 0; i < n; ++i) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      execve("/bin/true", child_argv, child_env);
      _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.1f\n", (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3);
  }
  return 0;
}
