/* The box's reaper and accountant: runs as pid 2 of every box, right under bubblewrap's init.
 *
 * Built once per executor with the system compiler (jobs/rewards/box.py). Usage:
 *   boxinit report_fd=N uid=N cpu_ms=N nproc=N as=BYTES nofile=N fsize=BYTES idle_ms=N -- PROGRAM...
 * Named, in any order, each exactly once (box.py's INIT_KEYS is the same list): an unknown,
 * repeated, missing or non-integer key is refused with exit 2 and a line naming it, so a limit
 * added on one side of the Python/C seam and not the other fails the first box, not silently.
 * uid < 0 keeps the caller's uid (bwrap's user-namespace mode), nproc 0 sets no process cap.
 *
 * - It is the box's child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER): every orphan of the
 *   program, setsid() daemons included, becomes its child, so it can kill and reap them all.
 * - The program runs in a child that drops to UID (setgroups, setresgid, setresuid: no
 *   capability is left, proc(5) / capabilities(7)) under the rlimits and no_new_privs.
 * - CPU time of the whole box: every few milliseconds it adds the utime+stime+cutime+cstime of
 *   every live process it can see (the box has its own /proc, proc(5) /proc/pid/stat fields 14-17) to
 *   the times of the children it has reaped (getrusage(2) RUSAGE_CHILDREN), and kills the box
 *   when the sum passes CPU_MS.
 * - When the program exits, everything else in the box is killed (kill(2) with pid -1 from
 *   inside the PID namespace reaches every process of the box but init) and reaped; then one
 *   line "status=S cpu_us=N cpu_killed=0|1 idle_killed=0|1" goes to REPORT_FD, which the
 *   program never had.
 * - idle_ms > 0: a box past idle_ms of wall time that has spent under a tenth of it on a CPU is
 *   asleep or blocked and is killed (idle_killed=1), long before the caller's wall backstop.
 * - It is not dumpable (PR_SET_DUMPABLE 0): a program of the same uid cannot open its /proc
 *   files, so cannot write a report of its own.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long ticks_of_live_processes(pid_t self, long hz) {
    long long total = 0;
    DIR *proc = opendir("/proc");
    if (!proc) return 0;
    struct dirent *e;
    while ((e = readdir(proc)) != NULL) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 1 || pid == self) continue;
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0) continue;
        buf[n] = 0;
        char *p = strrchr(buf, ')');
        if (!p) continue;
        /* after ") ": state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17): the
         * children a live process has waited for count now, not only once boxinit reaps it */
        unsigned long long ut = 0, st = 0;
        long long cut = 0, cst = 0;
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &ut, &st,
                   &cut, &cst) == 4)
            total += (long long)(ut + st) + cut + cst;
    }
    closedir(proc);
    return total * 1000000LL / hz;
}

static long long reaped_cpu_us(void) {
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static void set_limit(int resource, unsigned long long soft, unsigned long long hard) {
    struct rlimit r = {soft, hard};
    if (setrlimit(resource, &r) != 0) _exit(126);
}

static void start_program(char **argv, long uid, long cpu_ms, long nproc, unsigned long long as,
                          unsigned long long nofile, unsigned long long fsize) {
    unsigned long long cpu_s = (unsigned long long)(cpu_ms + 999) / 1000;
    /* A backstop a second past the limit: the box's own count (below) ends it first, so the verdict
     * never depends on which of the two the kernel happened to deliver first (issue 25). */
    set_limit(RLIMIT_CPU, cpu_s + 1, cpu_s + 2);
    set_limit(RLIMIT_AS, as, as);
    set_limit(RLIMIT_NOFILE, nofile, nofile);
    set_limit(RLIMIT_FSIZE, fsize, fsize);
    set_limit(RLIMIT_CORE, 0, 0);
    if (nproc > 0) set_limit(RLIMIT_NPROC, (unsigned long long)nproc, (unsigned long long)nproc);
    if (uid >= 0) {
        if (setgroups(0, NULL) != 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0 ||
            setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0)
            _exit(126);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(126);
    unsetenv("PWD"); /* bwrap --chdir sets it even after --clearenv: the environment stays exactly as given */
    execv(argv[0], argv);
    _exit(127);
}

enum { K_REPORT_FD, K_UID, K_CPU_MS, K_NPROC, K_AS, K_NOFILE, K_FSIZE, K_IDLE_MS, K_COUNT };
static const char *const KEYS[K_COUNT] = {"report_fd", "uid", "cpu_ms", "nproc", "as", "nofile", "fsize", "idle_ms"};

/* Parses key=value words up to "--" into values[]; returns the index of the program's argv, or -1. */
static int parse_args(int argc, char **argv, long long values[K_COUNT]) {
    int seen[K_COUNT] = {0};
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        char *eq = strchr(argv[i], '=');
        int k = 0;
        for (; k < K_COUNT; k++)
            if (eq && (size_t)(eq - argv[i]) == strlen(KEYS[k]) && strncmp(argv[i], KEYS[k], eq - argv[i]) == 0) break;
        if (k == K_COUNT) { fprintf(stderr, "boxinit: unknown key in '%.64s'\n", argv[i]); return -1; }
        if (seen[k]) { fprintf(stderr, "boxinit: key '%s' given twice\n", KEYS[k]); return -1; }
        char *end = NULL;
        errno = 0;
        values[k] = strtoll(eq + 1, &end, 10);
        if (errno || end == eq + 1 || *end) { fprintf(stderr, "boxinit: key '%s': '%.32s' is not an integer\n", KEYS[k], eq + 1); return -1; }
        seen[k] = 1;
    }
    for (int k = 0; k < K_COUNT; k++)
        if (!seen[k]) { fprintf(stderr, "boxinit: missing key '%s'\n", KEYS[k]); return -1; }
    if (i >= argc - 1) { fprintf(stderr, "boxinit: no program after '--'\n"); return -1; }
    return i + 1;
}

int main(int argc, char **argv) {
    long long v[K_COUNT];
    int prog = parse_args(argc, argv, v);
    if (prog < 0) return 2;
    int report = (int)v[K_REPORT_FD];
    long uid = (long)v[K_UID], cpu_ms = (long)v[K_CPU_MS], nproc = (long)v[K_NPROC];
    unsigned long long as = (unsigned long long)v[K_AS], nofile = (unsigned long long)v[K_NOFILE];
    unsigned long long fsize = (unsigned long long)v[K_FSIZE];
    long long idle_ms = v[K_IDLE_MS];
    struct timespec started;
    clock_gettime(CLOCK_MONOTONIC, &started);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    fcntl(report, F_SETFD, FD_CLOEXEC);
    pid_t child = fork();
    if (child < 0) return 3;
    if (child == 0) start_program(argv + prog, uid, cpu_ms, nproc, as, nofile, fsize);

    long hz = sysconf(_SC_CLK_TCK);
    pid_t self = getpid();
    int status = 0, main_done = 0, cpu_killed = 0, idle_killed = 0;
    struct timespec pause = {0, 1000000};
    for (;;) {
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
            if (pid == child) { status = st; main_done = 1; }
        if (pid < 0 && errno == ECHILD) break;
        if (main_done) { kill(-1, SIGKILL); continue; }
        long long used_us = reaped_cpu_us() + ticks_of_live_processes(self, hz);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long wall_us = (now.tv_sec - started.tv_sec) * 1000000LL + (now.tv_nsec - started.tv_nsec) / 1000;
        /* Idle: past idle_ms of wall time with under a tenth of it on a CPU: asleep or blocked,
         * as judges' "idleness limit" (a CPU-bound program on a loaded machine still gets far
         * more than a tenth). */
        if (!cpu_killed && !idle_killed && idle_ms > 0 && wall_us > idle_ms * 1000LL && used_us * 10 < wall_us) {
            idle_killed = 1;
            kill(-1, SIGKILL);
        }
        if (!cpu_killed && used_us > cpu_ms * 1000LL) {
            cpu_killed = 1;
            kill(-1, SIGKILL);
        }
        nanosleep(&pause, NULL);
        if (pause.tv_nsec < 8000000) pause.tv_nsec *= 2;
    }
    dprintf(report, "status=%d cpu_us=%lld cpu_killed=%d idle_killed=%d\n", status, reaped_cpu_us(),
            cpu_killed, idle_killed);
    return 0;
}
