"""The seccomp filter every box runs under: a small classic-BPF program built by hand (no library).

Why by hand: the filter is short (a deny list of ~50 syscalls plus one argument check), the
executor ships as stdlib + pydantic into the gVisor pod and into trainers, and libseccomp's Python
bindings are not on PyPI in a maintained form (pyseccomp 0.1.2 is a 2021 ctypes shim that still
needs libseccomp.so at run time). boxinit reads the compiled program from a file descriptor
(`seccomp_fd=N`) and installs it on itself (prctl PR_SET_SECCOMP) once /box is bounded, before
it starts the program (jobs/rewards/boxinit.c).

Sources for the encoding:
- struct seccomp_data and the return values: Linux include/uapi/linux/seccomp.h and
  Documentation/userspace-api/seccomp_filter.rst (nr at offset 0, arch at 4, args[i] at 16 + 8*i;
  SECCOMP_RET_KILL_PROCESS 0x80000000, SECCOMP_RET_ERRNO 0x00050000, SECCOMP_RET_ALLOW 0x7fff0000).
- struct sock_filter {u16 code; u8 jt; u8 jf; u32 k} and the opcodes: include/uapi/linux/filter.h
  and bpf_common.h (BPF_LD|BPF_W|BPF_ABS 0x20, BPF_JMP|BPF_JEQ|BPF_K 0x15, |BPF_JGE 0x35,
  |BPF_JSET 0x45, BPF_RET|BPF_K 0x06).
- syscall numbers: arch/x86/entry/syscalls/syscall_64.tbl; AUDIT_ARCH_X86_64 0xc000003e
  (include/uapi/linux/audit.h). x32 calls (nr | 0x40000000) and any other architecture (int 0x80)
  are refused too, so a program cannot reach a denied call through another syscall table.
"""

from __future__ import annotations

import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
EPERM, ENOSYS = 1, 38

# clone() flags that make a namespace (include/uapi/linux/sched.h): CLONE_NEWTIME, NEWNS,
# NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
CLONE_NAMESPACES = (
    0x00000080
    | 0x00020000
    | 0x02000000
    | 0x04000000
    | 0x08000000
    | 0x10000000
    | 0x20000000
    | 0x40000000
)

# What a contest solution (and g++) never needs, refused with EPERM, and why.
DENIED: dict[str, tuple[int, str]] = {
    # new namespaces (a user namespace is the usual first step of a kernel exploit) and joining others
    "unshare": (272, "namespaces"),
    "setns": (308, "namespaces"),
    # io_uring: a second syscall interface that bypasses seccomp argument checks; a steady CVE source
    "io_uring_setup": (425, "io_uring"),
    "io_uring_enter": (426, "io_uring"),
    "io_uring_register": (427, "io_uring"),
    # the mount table (the box's tree is fixed by bwrap before the filter is installed)
    "mount": (165, "mounts"),
    "umount2": (166, "mounts"),
    "pivot_root": (155, "mounts"),
    "chroot": (161, "mounts"),
    "open_tree": (428, "mounts"),
    "move_mount": (429, "mounts"),
    "fsopen": (430, "mounts"),
    "fsconfig": (431, "mounts"),
    "fsmount": (432, "mounts"),
    "fspick": (433, "mounts"),
    "mount_setattr": (442, "mounts"),
    # reading or steering other processes
    "ptrace": (101, "other processes"),
    "process_vm_readv": (310, "other processes"),
    "process_vm_writev": (311, "other processes"),
    "kcmp": (312, "other processes"),
    "pidfd_getfd": (438, "other processes"),
    "process_madvise": (440, "other processes"),
    # a signal through a pidfd, which may also be a /proc/<pid> directory's (pidfd_send_signal(2))
    "pidfd_send_signal": (424, "other processes"),
    # memory that RLIMIT_AS does not see: memfds and System V shared memory/IPC objects
    "memfd_create": (319, "unaccounted memory"),
    "memfd_secret": (447, "unaccounted memory"),
    "shmget": (29, "unaccounted memory"),
    "msgget": (68, "unaccounted memory"),
    "semget": (64, "unaccounted memory"),
    # the kernel's asynchronous I/O: one io_setup could take the host's whole aio-max-nr quota
    # (fs/aio.c counts io_setup's events against it for the whole host), and a solution only
    # reads stdin and writes stdout, never needing it
    "io_setup": (206, "host-wide quota"),
    "io_destroy": (207, "host-wide quota"),
    "io_getevents": (208, "host-wide quota"),
    "io_submit": (209, "host-wide quota"),
    "io_cancel": (210, "host-wide quota"),
    "io_pgetevents": (333, "host-wide quota"),
    # hard links: each adds a dentry of kernel memory the tmpfs size does not count (176 MiB
    # per box was measured); a solution never needs one (symlinks, which it might, are sized)
    "link": (86, "unsized kernel memory"),
    "linkat": (265, "unsized kernel memory"),
    # network: the box has its own empty network namespace; refusing socket() is the second layer
    "socket": (41, "network"),
    # kernel attack surface with no use in a solution
    "bpf": (321, "kernel surface"),
    "perf_event_open": (298, "kernel surface"),
    "userfaultfd": (323, "kernel surface"),
    "keyctl": (250, "kernel surface"),
    "add_key": (248, "kernel surface"),
    "request_key": (249, "kernel surface"),
    "kexec_load": (246, "kernel surface"),
    "kexec_file_load": (320, "kernel surface"),
    "init_module": (175, "kernel surface"),
    "finit_module": (313, "kernel surface"),
    "delete_module": (176, "kernel surface"),
    "open_by_handle_at": (304, "kernel surface"),
    "name_to_handle_at": (303, "kernel surface"),
    "fanotify_init": (300, "kernel surface"),
    "quotactl": (179, "kernel surface"),
    "syslog": (103, "kernel surface"),
    "acct": (163, "kernel surface"),
    "swapon": (167, "kernel surface"),
    "swapoff": (168, "kernel surface"),
    "reboot": (169, "kernel surface"),
    "iopl": (172, "kernel surface"),
    "ioperm": (173, "kernel surface"),
    "modify_ldt": (154, "kernel surface"),
    "lookup_dcookie": (212, "kernel surface"),
    "vhangup": (153, "kernel surface"),
}
CLONE, CLONE3 = 56, 435
# rt_sigaction(SIGCHLD, ...) is refused: with SIGCHLD ignored or SA_NOCLDWAIT the
# kernel reaps a program's children itself and their CPU time reaches no one's counters (not the
# parent's cutime, not boxinit's RUSAGE_CHILDREN): 6 CPU-s passed a 2 s limit. A solution never
# needs a SIGCHLD handler; waited-for children are counted through their parent's cutime.
RT_SIGACTION, SIGCHLD = 13, 17
FCNTL, F_SETPIPE_SZ = 72, 1031
KILL, TKILL, TGKILL, RT_SIGQUEUEINFO, RT_TGSIGQUEUEINFO, PIDFD_OPEN = 62, 200, 234, 129, 297, 434
BOX_INIT_PID = 1
# Calls refused only with one argument: (nr, argument index, "equals" | "any-bit", value, why).
ARGUMENT_CHECKS: tuple[tuple[int, int, str, int, str], ...] = (
    (CLONE, 0, "any-bit", CLONE_NAMESPACES, "clone() making a namespace"),
    (
        RT_SIGACTION,
        0,
        "equals",
        SIGCHLD,
        "SIGCHLD handlers: auto-reaped children escape accounting",
    ),
    # Signals to the box's pid 1, boxinit, which counts the box's CPU time and ends it: in
    # user-namespace mode it shares the program's uid, so the kernel's uid check would let a
    # SIGSTOP through (a stopped boxinit held a box to its backstop). The kernel already drops
    # every signal a box's own process sends its pid-namespace init unless the init handles it
    # (kernel/signal.c sig_task_ignored, SIGNAL_UNKILLABLE), and boxinit handles none; this is
    # the second wall. kill(0) and kill(-1) never reach it: the program runs in a session of its
    # own, and kill(-1) spares the init.
    *(
        (nr, 0, "equals", BOX_INIT_PID, f"{name}() on the box's init")
        for name, nr in (
            ("kill", KILL),
            ("tkill", TKILL),
            ("tgkill", TGKILL),
            ("rt_sigqueueinfo", RT_SIGQUEUEINFO),
            ("rt_tgsigqueueinfo", RT_TGSIGQUEUEINFO),
            ("pidfd_open", PIDFD_OPEN),
        )
    ),
    # Pipes grown to pipe-max-size (1 MiB each) held 14 MiB past the memory limit (measured:
    # pipe memory is not counted by RLIMIT_AS); at the default 64 KiB, open_files pipes stay
    # within a MiB or two.
    (FCNTL, 1, "equals", F_SETPIPE_SZ, "pipe buffers past the memory limit"),
)
# The highest x86_64 syscall number reviewed for this list (removexattrat, Linux 6.13,
# arch/x86/entry/syscalls/syscall_64.tbl). Every number above it gets ENOSYS, as if the kernel
# were older (`open_tree_attr`, 467 in Linux 6.15, once passed a deny list that did not know
# it): a newer kernel widens nothing until someone reviews its calls and raises this.
HIGHEST_REVIEWED = 466

_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def filter_program() -> bytes:
    """The filter as the bytes of a struct sock_filter array (what boxinit reads from `seccomp_fd`).

    clone3 gets ENOSYS rather than EPERM: its flags sit behind a pointer a filter cannot read, and
    glibc falls back to clone(), whose flags are checked here (the approach of container runtimes'
    default profiles). clone() with any namespace flag is refused.
    """
    if platform.machine() not in ("x86_64", "AMD64"):
        raise RuntimeError(
            f"sandbox seccomp: no filter for architecture {platform.machine()!r} (x86_64 only)"
        )
    denied = sorted(nr for nr, _ in DENIED.values())
    # Instruction layout; jump offsets count instructions after the jumping one.
    head = 6  # ld arch, jeq arch, ret kill, ld nr, jge x32, jge unreviewed
    n, m = len(denied), len(ARGUMENT_CHECKS)
    i_clone3 = head + n
    i_checks = i_clone3 + 1  # one jeq per checked call
    i_allow = i_checks + m
    i_blocks = i_allow + 1  # per checked call: ld args[i]; jeq/jset value -> eperm; ret allow
    i_eperm = i_blocks + 3 * m
    i_enosys = i_eperm + 1
    prog = [
        _op(_LD_ABS, 4),
        _op(_JEQ, AUDIT_ARCH_X86_64, jt=1, jf=0),
        _op(_RET, RET_KILL_PROCESS),
        _op(_LD_ABS, 0),
        _op(_JGE, X32_SYSCALL_BIT, jt=i_eperm - 5, jf=0),
        _op(_JGE, HIGHEST_REVIEWED + 1, jt=i_enosys - 6, jf=0),
    ]
    for j, nr in enumerate(denied):
        here = head + j
        prog.append(_op(_JEQ, nr, jt=i_eperm - here - 1, jf=0))
    prog.append(_op(_JEQ, CLONE3, jt=i_enosys - i_clone3 - 1, jf=0))
    for j, (nr, _arg, _test, _value, _why) in enumerate(ARGUMENT_CHECKS):
        prog.append(_op(_JEQ, nr, jt=i_blocks + 3 * j - (i_checks + j) - 1, jf=0))
    prog.append(_op(_RET, RET_ALLOW))
    for j, (_nr, arg, test, value, _why) in enumerate(ARGUMENT_CHECKS):
        here = i_blocks + 3 * j
        prog.append(_op(_LD_ABS, 16 + 8 * arg))  # args[arg], low 32 bits
        prog.append(_op(_JSET if test == "any-bit" else _JEQ, value, jt=i_eperm - here - 2, jf=0))
        prog.append(_op(_RET, RET_ALLOW))
    prog.append(_op(_RET, RET_ERRNO | EPERM))
    prog.append(_op(_RET, RET_ERRNO | ENOSYS))
    assert len(prog) == i_enosys + 1
    assert all(b[2] < 256 for b in prog)
    return b"".join(prog)
