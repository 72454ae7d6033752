/* Baseline for the exec round trip: fork + execve("/bin/true") + waitpid,
 * N times, in a plain C loop. Prints the latencies' p50 and p99 in
 * microseconds as JSON. Usage: fork_exec_baseline [N] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  double* us = malloc(sizeof(double) * (size_t)n);
  char* const child_argv[] = {"/bin/true", NULL};
  char* const child_env[] = {NULL};
  for (int i = 0; i < n; ++i) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
      execve("/bin/true", child_argv, child_env);
      _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    us[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
  }
  qsort(us, (size_t)n, sizeof(double), cmp);
  printf("{\"n\": %d, \"p50_us\": %.1f, \"p99_us\": %.1f}\n", n, us[n / 2], us[n * 99 / 100]);
  free(us);
  return 0;
}
