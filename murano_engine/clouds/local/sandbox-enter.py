"""The first process of a local-cloud server's sandbox: makes it, then runs its init.

``main(args, start_agent, name_process)`` runs in a process forked by
``murano_agent.forkserver`` (root, in the host's namespaces, the agent's
modules already imported): ``args`` holds the server's control-group files
(``cgroups``), its network namespace's file (``netns``), the most of its output
kept (``output_limit``), what its root is made of (``root``: where to build it,
the host name, the server's folder, the host folders bound read-only, the init
code), the unprivileged ``uid`` the server runs as and the agent's arguments
(``agent``).

This process joins the control groups and the network namespace, then makes
new mount (private), UTS, IPC and PID namespaces and forks the sandbox's PID 1;
it waits for it and ends with its status, ignoring INT and TERM (PID 1 takes
those). PID 1 dies with it (SIGKILL). The sandbox's output (PID 1's, its
agents', what they start) comes to this process through a pipe, and this
process keeps it in the engine's file (its own standard output), at most
``output_limit`` bytes of it: a guest that takes a descriptor of its agent's (it
is root in its own user namespace: ``pidfd_getfd``) holds the pipe, not the host
file, which it could otherwise grow without end or empty.

PID 1 builds the sandbox's root (system
calls, not a mount command each: a server's set-up ran some twenty programs)
and moves into it, gives up root for ``uid`` (no supplementary groups, no capabilities,
an empty bounding set), makes a user namespace of its own where it is root,
then serves as the sandbox's init (``/init.py``), starting agents by forking.
"""

import ctypes
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 1 << 18
MNT_DETACH = 2
#: pivot_root(2), which the C library does not wrap, by machine (else the command)
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
#: host folders and files a sandbox sees read-only (those that exist), and its devices
TOP_FOLDERS = ("bin", "lib", "lib64", "sbin")
ETC_FOLDERS = ("ssl", "alternatives")
ETC_FILES = ("passwd", "group", "nsswitch.conf", "ld.so.cache", "localtime")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
CAPABILITY_VERSION_3 = 0x20080522
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _write(path, text):
    with open(path, "w") as stream:
        stream.write(text)


def _mount(source, target, fstype=None, flags=0, options=None):
    _check(libc.mount(os.fsencode(source), os.fsencode(target),
                      fstype.encode() if fstype else None, flags,
                      options.encode() if options else None),
           f"mounting {source} on {target}")


def _bind_read_only(source, target):
    """``mount --rbind -o ro``: the bind, then its remount read-only."""
    _mount(source, target, None, MS_BIND | MS_REC | MS_RDONLY)
    _mount("none", target, None, MS_REMOUNT | MS_BIND | MS_REC | MS_RDONLY)


def _build_root(root, hostname, folder, read_only, init, tmp_mib=256, shm_mib=64):
    """Name the host, build the sandbox's root at ``root`` (a tmpfs of read-only binds
    of what the agent needs, the server's ``folder`` at /sandbox, ``init`` copied to
    /init.py, /tmp and /dev/shm tmpfs of ``tmp_mib`` and ``shm_mib``) and move this
    mount namespace into it; the old root is let go."""
    socket.sethostname(hostname)
    _mount("sandbox-root", root, "tmpfs", 0, "mode=0755,size=16m")
    for name in ("usr", "etc", "proc", "dev/shm", "sandbox", ".host"):
        os.makedirs(f"{root}/{name}")
    for top in TOP_FOLDERS:
        if os.path.islink(f"/{top}"):
            os.symlink(os.readlink(f"/{top}"), f"{root}/{top}")
        elif os.path.isdir(f"/{top}"):
            os.mkdir(f"{root}/{top}")
            _bind_read_only(f"/{top}", f"{root}/{top}")
    _bind_read_only("/usr", f"{root}/usr")
    os.mkdir(f"{root}/tmp")
    _mount("sandbox-tmp", f"{root}/tmp", "tmpfs", 0, f"mode=1777,size={int(tmp_mib)}m")
    for path in [p for p in read_only if os.path.exists(p)]:
        os.makedirs(root + path, exist_ok=True)
        _bind_read_only(path, root + path)
    for name in [n for n in ETC_FOLDERS if os.path.isdir(f"/etc/{n}")]:
        os.mkdir(f"{root}/etc/{name}")
        _bind_read_only(f"/etc/{name}", f"{root}/etc/{name}")
    for name in [n for n in ETC_FILES if os.path.exists(f"/etc/{n}")]:
        shutil.copyfile(f"/etc/{name}", f"{root}/etc/{name}")  # the file a link names
    _write(f"{root}/etc/hosts", f"127.0.0.1 localhost\n127.0.1.1 {hostname}\n")
    _write(f"{root}/etc/hostname", f"{hostname}\n")
    for name in DEVICES:
        _write(f"{root}/dev/{name}", "")
        _mount(f"/dev/{name}", f"{root}/dev/{name}", None, MS_BIND)
    _mount("sandbox-shm", f"{root}/dev/shm", "tmpfs", 0, f"mode=1777,size={int(shm_mib)}m")
    _mount(folder, f"{root}/sandbox", None, MS_BIND)
    _mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    shutil.copyfile(init, f"{root}/init.py")
    os.chmod(root, 0o555)
    os.chdir(root)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        subprocess.run(["pivot_root", ".", ".host"], check=True)
    else:
        _check(libc.syscall(number, b".", b".host"), "moving into the sandbox's root")
    _check(libc.umount2(b"/.host", MNT_DETACH), "letting the host's root go")
    os.rmdir("/.host")


def _no_capabilities():
    """An empty bounding set (emptying it needs root: before :func:`_become`)."""
    with open("/proc/sys/kernel/cap_last_cap") as stream:
        last = int(stream.read())
    for capability in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0), "dropping capabilities")


def _become(uid):
    """The server's user, with no supplementary groups and no capabilities (permitted and
    effective go with root; the inheritable ones are cleared)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice, all empty
    _check(libc.capset(header, data), "clearing capabilities")
    # A change of user makes a process undumpable (its /proc files root's), as an exec
    # would not: it must write its own user namespace's maps.
    _check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "making the process its user's")


def _own_user_namespace(uid):
    """A user namespace where this process is root (it stays ``uid`` outside)."""
    _check(libc.unshare(CLONE_NEWUSER), "making the user namespace")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {uid} 1")


def _pid1(parent_alive, args, start_agent):
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "tying PID 1 to its parent")
    if select.select([parent_alive], [], [], 0)[0]:  # its end closed: the parent died
        os._exit(1)
    os.close(parent_alive)
    _build_root(**args["root"])
    _no_capabilities()
    _become(args["uid"])
    _own_user_namespace(args["uid"])
    os.chdir("/sandbox")
    os.environ.update(HOME="/sandbox", PATH=PATH)
    init = runpy.run_path("/init.py", run_name="sandbox_init")
    init["serve"](lambda: start_agent(args["agent"]))


def main(args, start_agent, name_process):
    """Called by the fork server: ``args`` from the engine, ``start_agent(argv)`` (an
    agent's pid), ``name_process(name)``."""
    for path in args["cgroups"]:  # first: all the server runs is in them
        _write(path, str(os.getpid()))
    name_process(b"murano-sandbox")
    namespace = os.open(args["netns"], os.O_RDONLY)
    _check(libc.setns(namespace, CLONE_NEWNET), "entering the network namespace")
    os.close(namespace)
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID),
           "making the namespaces")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None),
           "making the mounts private")
    parent_alive, held = os.pipe()  # readable once the parent (holding ``held``) died
    output, into_output = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(held)
            os.close(output)
            os.dup2(into_output, 1)
            os.dup2(into_output, 2)
            os.close(into_output)
            name_process(b"murano-init")
            _pid1(parent_alive, args, start_agent)
        except SystemExit:
            raise
        except BaseException as exc:
            print(f"sandbox: {exc}", file=sys.stderr, flush=True)
            os._exit(71)
        os._exit(0)
    os.close(parent_alive)
    os.close(into_output)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _keep_output(output, 1, args["output_limit"])  # until the sandbox's last process ends
    _, status = os.waitpid(child, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


def _keep_output(source, sink, limit):
    """Append what comes from ``source`` to the file ``sink``, keeping it under ``limit``
    bytes: when it would grow past, its last half is kept and the rest cut."""
    while data := os.read(source, 1 << 16):
        try:
            size = os.fstat(sink).st_size
            if size + len(data) > limit:
                kept = os.pread(sink, limit // 2, max(0, size - limit // 2))
                os.ftruncate(sink, 0)
                os.write(sink, b"[earlier output cut: the last %d bytes follow]\n"
                         % len(kept) + kept)
            os.write(sink, data)
        except OSError:  # the host's disk is full: the output is lost, the sandbox lives on
            pass
