"""The first process of a local-cloud server's sandbox: makes it, then runs its init.

``main(args, start_agent, name_process)`` runs in a process forked by
``murano_agent.forkserver`` (root, in the host's namespaces, the agent's
modules already imported): ``args`` holds the server's control-group files
(``cgroups``), its network namespace's file (``netns``), the set-up command
(``setup``: ``sh sandbox-init.sh ...``), the unprivileged ``uid`` the server
runs as and the agent's arguments (``agent``).

This process joins the control groups and the network namespace, then makes
new mount (private), UTS, IPC and PID namespaces and forks the sandbox's PID 1;
it waits for it and ends with its status, ignoring INT and TERM (PID 1 takes
those). PID 1 dies with it (SIGKILL). PID 1 runs the set-up (the sandbox's
root), gives up root for ``uid`` (no supplementary groups, no capabilities,
an empty bounding set), makes a user namespace of its own where it is root,
then serves as the sandbox's init (``/init.py``), starting agents by forking.
"""

import ctypes
import os
import runpy
import select
import signal
import subprocess
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
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
    os.chdir("/")
    subprocess.run(args["setup"], check=True)
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
    child = os.fork()
    if child == 0:
        try:
            os.close(held)
            name_process(b"murano-init")
            _pid1(parent_alive, args, start_agent)
        except SystemExit:
            raise
        except BaseException as exc:
            print(f"sandbox: {exc}", file=sys.stderr, flush=True)
            os._exit(71)
        os._exit(0)
    os.close(parent_alive)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _, status = os.waitpid(child, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
