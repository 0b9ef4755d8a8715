/* The box's reaper and accountant: runs as pid 1 of every box (bwrap --as-pid-1), the init of its
 * PID namespace, so that nothing the program can do reaches it:
 * - signals: the kernel drops every signal a process of the namespace sends its init unless the init
 *   has a handler for it, SIGKILL and SIGSTOP included (kernel/signal.c sig_task_ignored,
 *   SIGNAL_UNKILLABLE; pid_namespaces(7)); boxinit has none and blocks none: it waits for the program
 *   on a pidfd (pidfd_open(2)), not on SIGCHLD. The filter refuses kill/tkill/tgkill/sigqueue and
 *   pidfd_open on pid 1 as a second wall, and the program runs in a session of its own (setsid), so
 *   kill(0) reaches only its own processes; kill(-1) never reaches the init. In user-namespace mode
 *   boxinit shares the program's uid, so without this a SIGSTOP held the box to its backstop.
 * - memory: it is not dumpable (PR_SET_DUMPABLE 0), so /proc/1/mem, /proc/1/exe and ptrace need
 *   CAP_SYS_PTRACE (ptrace(2) "Ptrace access mode checking"), which the program never has. bwrap's
 *   own init, pid 1 before, was dumpable and ran as the program's uid in user-namespace mode: a
 *   program wrote code at its next instruction through /proc/1/mem and it ran unfiltered.
 * Where pidfd_open is missing (ENOSYS, a kernel before 5.3), it falls back to SIGCHLD blocked and
 * sigtimedwait(2): a signal then wakes it early, nothing more (the next check runs at once).
 *
 * Built once per executor with the system compiler (jobs/rewards/box.py). Usage:
 *   boxinit report_fd=N uid=N cpu_ms=N nproc=N as=BYTES nofile=N fsize=BYTES idle_ms=N
 *           tests=N dir_fd=N wall_ms=N box_bytes=N box_inodes=N seccomp_fd=N -- PROGRAM...
 * Named, in any order, each exactly once (box.py's INIT_KEYS is the same list): an unknown,
 * repeated, missing or non-integer key is refused with exit 2 and a line naming it, so a limit
 * added on one side of the Python/C seam and not the other fails the first box, not silently.
 * uid < 0 keeps the caller's uid (bwrap's user-namespace mode), nproc 0 sets no process cap.
 *
 * - Before anything else, as the box's only privileged step: it mounts /box, a tmpfs of
 *   BOX_BYTES and BOX_INODES files, mode 1777 (tmpfs(5) size, nr_inodes; bwrap's --tmpfs takes a
 *   size but no inode count, and empty files cost kernel memory the size does not count). A
 *   fresh mount, not a remount: gVisor, where the cluster's executor runs, refuses MS_REMOUNT
 *   with EINVAL but takes nr_inodes on a new tmpfs (pkg/sentry/syscalls/linux/sys_mount.go,
 *   pkg/sentry/fsimpl/tmpfs/tmpfs.go). Nothing is bound below /box (box.py refuses it), so the
 *   mount hides nothing. In bwrap's user-namespace mode bwrap grants boxinit CAP_SYS_ADMIN and
 *   CAP_SETPCAP in the box's own user namespace for this (--cap-add), and boxinit then drops every
 *   capability, bounding and ambient sets included (capabilities(7)), so the program never has
 *   one. Then it installs the seccomp filter read from SECCOMP_FD on itself (after no_new_privs,
 *   seccomp(2)): bwrap's own --seccomp would install it before boxinit runs, and the filter
 *   refuses mount(2). A box whose mount, capability drop or filter fails runs nothing: every
 *   test is reported with start_error=mount|capabilities|seccomp:ERRNO.
 *
 * - As the namespace's init, every orphan of the program, setsid() daemons included, becomes its
 *   child, so it can kill and reap them all; when it exits the kernel kills whatever is left.
 * - The program runs in a child that drops to UID (setgroups, setresgid, setresuid: no
 *   capability is left, proc(5) / capabilities(7)) under the rlimits and no_new_privs.
 * - CPU time of the whole box: every 0.25 to 64 ms (8 ms at most near a limit, next_pause_us) it
 *   adds the utime+stime+cutime+cstime of every live process it can see (the box has its own
 *   /proc, proc(5) /proc/pid/stat fields 14-17) to the times of the children it has reaped
 *   (getrusage(2) RUSAGE_CHILDREN), and kills the box when the sum passes CPU_MS.
 * - When the program exits, everything else in the box is killed (kill(2) with pid -1 from
 *   the namespace's init reaches every other process of the box) and reaped; then one
 *   line "status=S cpu_us=N cpu_killed=0|1 idle_killed=0|1 start_error=0|STEP:ERRNO polls=N" goes to
 *   REPORT_FD, which the program never had.
 * - A program that could not be started (fork, its limits, the uid switch or execve failed) is
 *   reported as start_error=STEP:ERRNO, e.g. start_error=execve:11 (EAGAIN: RLIMIT_NPROC), never
 *   only as exit status 127 or 126: those are also what a program may exit with, and a box that
 *   could not start is the sandbox's fault, not the program's (issue 25's flake). The child
 *   writes the step and errno to a close-on-exec pipe; a successful execve closes it empty.
 * - idle_ms > 0: a box past idle_ms of wall time that has spent under a tenth of it on a CPU is
 *   asleep or blocked and is killed (idle_killed=1), long before the caller's wall backstop.
 * - It is not dumpable (PR_SET_DUMPABLE 0): a program of the same uid cannot open its /proc
 *   files (mem, fd, exe), so cannot write a report of its own nor change boxinit's code.
 * - tests=0: PROGRAM runs once on the box's stdin and stdout. tests=N > 0: PROGRAM runs N times,
 *   one test after another (one box per solution, issue 25: a box per test cost 12 x a bare
 *   fork/exec). Test i reads `in.<i>` and writes `out.<i>` of the directory DIR_FD names, opened
 *   here (the program never has DIR_FD: it is close-on-exec, and /proc of a non-dumpable
 *   process is closed to it), with its own CPU limit, idle rule and wall limit (wall_ms, 0:
 *   none); before the next test every process of the box is killed and reaped, so a test's
 *   processes never run into the next one and its CPU time is its own. One report line per test,
 *   "test=I status=S cpu_us=N cpu_killed=0|1 idle_killed=0|1 wall_killed=0|1 wall_us=N
 *   start_error=0|STEP:ERRNO polls=N" (polls: how many times the box's CPU was summed).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* arch/x86/entry/syscalls/syscall_64.tbl, Linux 5.3 */
#endif

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

/* The steps of starting the program, named in start_error= (box.py's START_STEPS is the same list). */
enum { S_NONE, S_FORK, S_PIPE, S_STDIO, S_SETRLIMIT, S_SETGROUPS, S_SETRESGID, S_SETRESUID, S_NO_NEW_PRIVS, S_EXECVE,
       S_MOUNT, S_CAPABILITIES, S_SECCOMP };
static const char *const STEPS[] = {"none",      "fork",         "pipe",    "stdio",   "setrlimit",
                                    "setgroups", "setresgid",    "setresuid", "no_new_privs", "execve",
                                    "mount",     "capabilities", "seccomp"};

/* In the child, before execve: tells boxinit which step failed and why, then exits. */
static void start_failed(int pipe_w, int step, int status) {
    int msg[2] = {step, errno};
    ssize_t unused = write(pipe_w, msg, sizeof msg);
    (void)unused;
    _exit(status);
}

static void set_limit(int pipe_w, int resource, unsigned long long soft, unsigned long long hard) {
    struct rlimit r = {soft, hard};
    if (setrlimit(resource, &r) != 0) start_failed(pipe_w, S_SETRLIMIT, 126);
}

static void start_program(int pipe_w, char **argv, long uid, long cpu_ms, long nproc, unsigned long long as,
                          unsigned long long nofile, unsigned long long fsize) {
    unsigned long long cpu_s = (unsigned long long)(cpu_ms + 999) / 1000;
    /* A backstop a second past the limit: the box's own count (below) ends it first, so the verdict
     * never depends on which of the two the kernel happened to deliver first (issue 25). */
    set_limit(pipe_w, RLIMIT_CPU, cpu_s + 1, cpu_s + 2);
    set_limit(pipe_w, RLIMIT_AS, as, as);
    set_limit(pipe_w, RLIMIT_NOFILE, nofile, nofile);
    set_limit(pipe_w, RLIMIT_FSIZE, fsize, fsize);
    set_limit(pipe_w, RLIMIT_CORE, 0, 0);
    /* The kernel counts every task of the uid against this, zombies included, until it is reaped:
     * execve fails with EAGAIN if the uid already has more (setresuid(2) sets PF_NPROC_EXCEEDED,
     * execve(2) checks it). box.UidLease hands out only uids with no task at all for that reason. */
    if (nproc > 0) set_limit(pipe_w, RLIMIT_NPROC, (unsigned long long)nproc, (unsigned long long)nproc);
    if (uid >= 0) {
        if (setgroups(0, NULL) != 0) start_failed(pipe_w, S_SETGROUPS, 126);
        if (setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0) start_failed(pipe_w, S_SETRESGID, 126);
        if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) start_failed(pipe_w, S_SETRESUID, 126);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) start_failed(pipe_w, S_NO_NEW_PRIVS, 126);
    unsetenv("PWD"); /* bwrap --chdir sets it even after --clearenv: the environment stays exactly as given */
    execv(argv[0], argv);
    start_failed(pipe_w, S_EXECVE, 127);
}

enum { K_REPORT_FD, K_UID, K_CPU_MS, K_NPROC, K_AS, K_NOFILE, K_FSIZE, K_IDLE_MS, K_TESTS, K_DIR_FD, K_WALL_MS,
       K_BOX_BYTES, K_BOX_INODES, K_SECCOMP_FD, K_COUNT };
static const char *const KEYS[K_COUNT] = {"report_fd", "uid",    "cpu_ms", "nproc",   "as",     "nofile",    "fsize",
                                          "idle_ms",   "tests",  "dir_fd", "wall_ms", "box_bytes", "box_inodes", "seccomp_fd"};

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

struct limits {
    long uid, cpu_ms, nproc;
    unsigned long long as, nofile, fsize;
    long long idle_ms, wall_ms;
};

struct outcome {
    int status, cpu_killed, idle_killed, wall_killed;
    long long cpu_us, wall_us;
    int start_step, start_errno; /* S_NONE: the program started */
    long long polls;             /* times the box's CPU was summed while the program ran */
};

/* The pause before the next check: 0.25 ms doubling to 8 ms, as long as any limit may be passed
 * within 8 ms; beyond that it keeps doubling to 64 ms, but never past the moment the CPU limit
 * could first be reached (the CPU time left over the processes that can run at once) nor past the
 * idle or wall deadline. Each check lists the box's /proc and reads the stat file of each of its
 * processes (~20-40 us): at a fixed 8 ms a 0.3 s compile was checked ~45 times, now ~13, CPU
 * taken from the judges on a loaded machine; a program is still stopped within 8 ms of a limit,
 * as before (tests/jobs/rewards/test_box_polls.py). */
static long long next_pause_us(long long pause_us, const struct limits *l, long long used_us,
                               long long wall_us, long parallel) {
    const long long near_us = 8000, far_us = 64000;
    long long next = pause_us * 2, cap = far_us;
    long long cpu_left = (l->cpu_ms * 1000LL - used_us) / parallel;
    if (cpu_left < cap) cap = cpu_left;
    if (l->idle_ms > 0 && l->idle_ms * 1000LL - wall_us < cap) cap = l->idle_ms * 1000LL - wall_us;
    if (l->wall_ms > 0 && l->wall_ms * 1000LL - wall_us < cap) cap = l->wall_ms * 1000LL - wall_us;
    if (cap < near_us) cap = near_us;
    return next < cap ? next : cap;
}

/* The start_error= value: "0", or the failed step and its errno. */
static const char *start_error(const struct outcome *o, char *buf, size_t size) {
    if (o->start_step == S_NONE) return "0";
    snprintf(buf, size, "%s:%d", STEPS[o->start_step], o->start_errno);
    return buf;
}

static long long since_us(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000000LL + (now.tv_nsec - start->tv_nsec) / 1000;
}

/* Runs PROGRAM once (stdin/stdout replaced when in_fd/out_fd >= 0) until every process of the
 * box has been reaped; the CPU time counted is this run's alone (the reaped children's times
 * since it started plus the live processes' own). */
static struct outcome run_once(char **argv, const struct limits *l, int in_fd, int out_fd) {
    struct outcome o = {0, 0, 0, 0, 0, 0, S_NONE, 0, 0};
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    long long reaped_before = reaped_cpu_us();
    struct timespec started;
    clock_gettime(CLOCK_MONOTONIC, &started);
    int start_pipe[2];
    if (pipe2(start_pipe, O_CLOEXEC) != 0) {
        o.start_step = S_PIPE, o.start_errno = errno, o.status = 126 << 8;
        return o;
    }
    pid_t child = fork();
    if (child < 0) {
        o.start_step = S_FORK, o.start_errno = errno, o.status = 126 << 8;
        close(start_pipe[0]);
        close(start_pipe[1]);
        return o;
    }
    if (child == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL); /* the program gets the mask it would have had */
        setsid(); /* a session and process group of its own: kill(0) never reaches boxinit */
        close(start_pipe[0]);
        if (in_fd >= 0 && dup2(in_fd, 0) < 0) start_failed(start_pipe[1], S_STDIO, 126);
        if (out_fd >= 0 && dup2(out_fd, 1) < 0) start_failed(start_pipe[1], S_STDIO, 126);
        start_program(start_pipe[1], argv, l->uid, l->cpu_ms, l->nproc, l->as, l->nofile, l->fsize);
    }
    /* Blocks only until the child's execve (which closes the pipe) or its report: the steps
     * before it never wait on anything. SIGCHLD is blocked here, so no EINTR but a stray one. */
    close(start_pipe[1]);
    int msg[2];
    ssize_t got;
    do got = read(start_pipe[0], msg, sizeof msg);
    while (got < 0 && errno == EINTR);
    close(start_pipe[0]);
    if (got == (ssize_t)sizeof msg && msg[0] > S_NONE && msg[0] <= S_EXECVE)
        o.start_step = msg[0], o.start_errno = msg[1];
    /* Woken by the program's exit through its pidfd: SIGCHLD is then unblocked, and a signal the
     * program sends is dropped by the kernel (see the top). A pending SIGCHLD is dropped too. */
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    if (pidfd >= 0) sigprocmask(SIG_UNBLOCK, &chld, NULL);
    long hz = sysconf(_SC_CLK_TCK);
    pid_t self = getpid();
    /* At most this many of the box's processes (threads count too: RLIMIT_NPROC) burn CPU at once. */
    long parallel = sysconf(_SC_NPROCESSORS_ONLN);
    if (parallel < 1) parallel = 1;
    if (l->nproc > 0 && l->nproc < parallel) parallel = l->nproc;
    int main_done = 0;
    long long pause_us = 125; /* doubled before the first pause */
    for (;;) {
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
            if (pid == child) { o.status = st; main_done = 1; }
        if (pid < 0 && errno == ECHILD) break;
        if (main_done) { kill(-1, SIGKILL); continue; }
        long long used_us = reaped_cpu_us() - reaped_before + ticks_of_live_processes(self, hz);
        long long wall_us = since_us(&started);
        /* Idle: past idle_ms of wall time with under a tenth of it on a CPU: asleep or blocked,
         * as judges' "idleness limit" (a CPU-bound program on a loaded machine still gets far
         * more than a tenth). */
        int killed = o.cpu_killed || o.idle_killed || o.wall_killed;
        if (!killed && l->idle_ms > 0 && wall_us > l->idle_ms * 1000LL && used_us * 10 < wall_us) {
            o.idle_killed = 1;
            kill(-1, SIGKILL);
        } else if (!killed && used_us > l->cpu_ms * 1000LL) {
            o.cpu_killed = 1;
            kill(-1, SIGKILL);
        } else if (!killed && l->wall_ms > 0 && wall_us > l->wall_ms * 1000LL) {
            o.wall_killed = 1;
            kill(-1, SIGKILL);
        }
        /* Woken at once by the program's exit (its pidfd, else SIGCHLD), else after the pause,
         * for the CPU, idle and wall checks; the pause is sized on what was just read. */
        pause_us = next_pause_us(pause_us, l, used_us, wall_us, parallel);
        struct timespec pause = {pause_us / 1000000, (pause_us % 1000000) * 1000};
        if (pidfd >= 0) {
            struct pollfd exited = {pidfd, POLLIN, 0};
            ppoll(&exited, 1, &pause, NULL);
        } else
            sigtimedwait(&chld, NULL, &pause);
        o.polls++;
    }
    if (pidfd >= 0) close(pidfd);
    o.cpu_us = reaped_cpu_us() - reaped_before;
    o.wall_us = since_us(&started);
    return o;
}

/* The box's one privileged step, then none: /box mounted with its bounds (and entered: bwrap's
 * --chdir /box left the directory under it), every capability dropped in user-namespace mode (in
 * root mode the program's child drops to its pool uid instead), and the filter on boxinit itself,
 * so everything the box ever runs is under it. Returns S_NONE or the step that failed (errno set). */
static int seal_box(long long box_bytes, long long box_inodes, int drop_capabilities, int seccomp_fd) {
    char options[96];
    snprintf(options, sizeof options, "size=%lld,nr_inodes=%lld,mode=1777", box_bytes, box_inodes);
    if (box_bytes <= 0 || box_inodes <= 0) {
        errno = EINVAL;
        return S_MOUNT;
    }
    if (mount("tmpfs", "/box", "tmpfs", MS_NOSUID | MS_NODEV, options) != 0 || chdir("/box") != 0) return S_MOUNT;
    if (drop_capabilities) {
        /* The bounding set first (it needs CAP_SETPCAP, dropped right after); EINVAL: past the
         * kernel's last capability. */
        for (int cap = 0; cap < 64; cap++)
            if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return S_CAPABILITIES;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return S_CAPABILITIES;
        struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3];
        memset(none, 0, sizeof none);
        if (syscall(SYS_capset, &header, none) != 0) return S_CAPABILITIES;
    }
    static struct sock_filter program[BPF_MAXINSNS];
    size_t got = 0;
    ssize_t n = 0;
    while (got < sizeof program && (n = read(seccomp_fd, (char *)program + got, sizeof program - got)) > 0)
        got += (size_t)n;
    char extra;
    if (n < 0 || got == 0 || got % sizeof program[0] || read(seccomp_fd, &extra, 1) != 0) {
        if (errno == 0 || n >= 0) errno = EINVAL; /* empty, torn or too long: no box without its filter */
        return S_SECCOMP;
    }
    close(seccomp_fd);
    struct sock_fprog fprog = {(unsigned short)(got / sizeof program[0]), program};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return S_NO_NEW_PRIVS;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0) return S_SECCOMP;
    return S_NONE;
}

static int open_test_file(int dir_fd, const char *kind, long long i, int flags) {
    char name[64];
    snprintf(name, sizeof name, "%s.%lld", kind, i);
    return openat(dir_fd, name, flags | O_CLOEXEC | O_NOFOLLOW, 0600);
}

int main(int argc, char **argv) {
    long long v[K_COUNT];
    int prog = parse_args(argc, argv, v);
    if (prog < 0) return 2;
    int report = (int)v[K_REPORT_FD], dir_fd = (int)v[K_DIR_FD];
    long long tests = v[K_TESTS];
    struct limits l = {(long)v[K_UID], (long)v[K_CPU_MS], (long)v[K_NPROC], (unsigned long long)v[K_AS],
                       (unsigned long long)v[K_NOFILE], (unsigned long long)v[K_FSIZE], v[K_IDLE_MS], v[K_WALL_MS]};
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    fcntl(report, F_SETFD, FD_CLOEXEC);
    errno = 0;
    int failed = seal_box(v[K_BOX_BYTES], v[K_BOX_INODES], l.uid < 0, (int)v[K_SECCOMP_FD]);
    if (failed != S_NONE) {
        char err[64];
        struct outcome o = {126 << 8, 0, 0, 0, 0, 0, failed, errno, 0};
        if (tests <= 0)
            dprintf(report, "status=%d cpu_us=0 cpu_killed=0 idle_killed=0 start_error=%s polls=0\n", o.status,
                    start_error(&o, err, sizeof err));
        for (long long i = 0; i < tests; i++)
            dprintf(report,
                    "test=%lld status=%d cpu_us=0 cpu_killed=0 idle_killed=0 wall_killed=0 wall_us=0 start_error=%s "
                    "polls=0\n",
                    i, o.status, start_error(&o, err, sizeof err));
        return 3;
    }
    if (tests <= 0) {
        struct outcome o = run_once(argv + prog, &l, -1, -1);
        char err[64];
        dprintf(report, "status=%d cpu_us=%lld cpu_killed=%d idle_killed=%d start_error=%s polls=%lld\n",
                o.status, o.cpu_us, o.cpu_killed, o.idle_killed || o.wall_killed, start_error(&o, err, sizeof err),
                o.polls);
        return 0;
    }
    fcntl(dir_fd, F_SETFD, FD_CLOEXEC);
    for (long long i = 0; i < tests; i++) {
        int in_fd = open_test_file(dir_fd, "in", i, O_RDONLY);
        int out_fd = open_test_file(dir_fd, "out", i, O_WRONLY | O_CREAT | O_TRUNC);
        if (in_fd < 0 || out_fd < 0) {
            dprintf(report, "test=%lld error=%d\n", i, errno);
            return 4;
        }
        struct outcome o = run_once(argv + prog, &l, in_fd, out_fd);
        close(in_fd);
        close(out_fd);
        char err[64];
        dprintf(report,
                "test=%lld status=%d cpu_us=%lld cpu_killed=%d idle_killed=%d wall_killed=%d wall_us=%lld start_error=%s "
                "polls=%lld\n",
                i, o.status, o.cpu_us, o.cpu_killed, o.idle_killed, o.wall_killed, o.wall_us,
                start_error(&o, err, sizeof err), o.polls);
    }
    return 0;
}
