"""NAME
    fio-pack device - block devices with the service times of a model (an SSD,
    an HDD, an array), built in user space

SYNOPSIS
    fio-pack device up     MODEL [--size SIZE] [--dir DIR] [--name NAME]
                           [--backdate-us N|auto] [--realtime]
    fio-pack device down   DEV
    fio-pack device list
    fio-pack device stats  DEV
    fio-pack device models [--json]
    fio-pack device help [COMMAND]

DESCRIPTION
    A modeled device is a real block device (/dev/loopN) whose requests are
    answered when a model of a device says they would have been: a loop
    device with direct I/O over a file that a FUSE daemon (build/moddev)
    serves, reading and writing a backing file at once and replying at the
    model's completion time. File systems, fio's own engines and the pack's
    engines run on it unchanged. docs/devices.md has the design, the models
    and how well the device keeps to them.

      up      bring a device up; prints its path (/dev/loopN)
      down    take it down (the backing file and its data are kept)
      list    the devices up, as JSON
      stats   a device's statistics, as JSON
      models  the models and the public specifications they come from

    MODEL is a spec: a model's name and its parameters, e.g.
    "fixed:channels=4,latency_us=1000" (fio-pack device models lists them).
    Everything needs root except models; up also needs /dev/fuse and the
    daemon, which make builds when libfuse3-dev is installed (Debian: fuse3,
    libfuse3-dev).

COMMANDS
    Each command's --help (or fio-pack device help COMMAND) is its manual page.

EXIT STATUS
    0 success; 2 a refusal or a failure, said in one line on standard error
    ("fio-pack device: ..."), with nothing left behind by the command.
"""
import argparse
import json
import signal
import subprocess
import sys

from fiopack.cli import run_command
from fiopack.device import lifecycle
from fiopack.device.state import (PROG, Error, daemon_alive, devices, find, loop_attached,
                                  moddev_path)
from fiopack.manpage import ManParser, sections
from fiopack.options import number

MANUAL = {}
MANUAL["up"] = dict(description="""\
NAME
    fio-pack device up - bring a modeled device up

SYNOPSIS
    fio-pack device up MODEL [--size SIZE] [--dir DIR] [--name NAME]
                       [--backdate-us N|auto] [--realtime]

DESCRIPTION
    Makes a block device that serves its requests at MODEL's pace and prints
    its path (/dev/loopN) on standard output, alone on its line:

      DEV=$(fio-pack device up fixed:channels=4,latency_us=1000 --size 256m)

    The device's data lives in DIR/NAME.img, the backing file, beside a
    sidecar NAME.img.fio-pack-device that says fio-pack made it. A new
    backing file is written in full, so that every block the device holds
    is real (a file system's unwritten extents would be answered without
    reaching the model). An existing one of ours is used as it is, its data
    kept: `up` after `down` with the same NAME and DIR finds the file
    system left on it. A file of that name that fio-pack did not make is
    never touched.

    Steps: the backing file; the daemon (build/moddev), which serves it as
    the file "disk" of a FUSE file system mounted under
    /run/fio-pack/devices/NAME/; a loop device with direct I/O over that
    file (without direct I/O, loop sends one request at a time). A failure
    or an interruption (Ctrl-C, SIGTERM, SIGHUP) at any step undoes the
    steps before it: no loop device, mount or daemon is left, nor a backing
    file this command created.

    The model sees requests as the loop device sends them: up to 128 at
    once, each at most 1 MiB. Data written is in the backing file before
    the write is answered; a flush (fsync) costs what the model says.

    Below saturation every request also pays the kernel's round trip
    (loop, FUSE, the daemon's wake-ups: 50-120 us on a VM), which is not
    the model's. So by default up first measures it: a device of its own
    (fixed:channels=1,latency_us=1000, 4 MiB under the state directory)
    read 110 times at depth 1, then taken down; the median beyond 1 ms is
    the device's --backdate-us, which `device list` and `device stats`
    show. --backdate-us N sets it, and 0 turns it off (then a request at
    depth 1 takes the model's time plus the round trip).
""", epilog="""\
EXIT STATUS
    0 the device is up; 2 refused or failed (one line on standard error):
    an unknown model or a bad parameter (named), not root, no /dev/fuse, the
    daemon not built or libfuse3 missing (the Debian packages named), a size
    larger than the free space under DIR, NAME already up, or a file named
    NAME.img in DIR that fio-pack did not make.
""")
MANUAL["down"] = dict(description="""\
NAME
    fio-pack device down - take a modeled device down

SYNOPSIS
    fio-pack device down DEV

DESCRIPTION
    Detaches the loop device DEV, unmounts the daemon's FUSE file system
    and stops the daemon, in that order, then forgets the device. The
    backing file is kept (`up` with the same --name and --dir uses it
    again); remove DIR/NAME.img and its .fio-pack-device sidecar to free the
    space.

    A device still in use is refused, with nothing changed: a file system
    mounted on it (unmount it first: it is yours, and unmounting it may have
    data to write), a process that has it open, swap, or a device stacked
    on it. A device whose daemon died (its I/O fails with EIO) is taken
    down the same way once nothing uses it.
""", epilog="""\
EXIT STATUS
    0 taken down; 2 refused: DEV is not a device of fio-pack device, it is
    in use, or not root.
""")
MANUAL["list"] = dict(description="""\
NAME
    fio-pack device list - the modeled devices that are up

SYNOPSIS
    fio-pack device list

DESCRIPTION
    Prints a JSON array, one object per device: its loop device, name,
    model, size in bytes, backing file, FUSE mount, daemon pid, back-dating
    and creation time, and "state": "up", or "daemon died" (I/O fails: take
    it down), or "detached" (its loop device was detached by hand: take it
    down).
""")
MANUAL["stats"] = dict(description="""\
NAME
    fio-pack device stats - what a modeled device has served

SYNOPSIS
    fio-pack device stats DEV

DESCRIPTION
    Prints, as one JSON object, the daemon's statistics since the device
    came up (take two and subtract for an interval):

      device, name        the loop device and its name
      model, size_bytes   the spec and the device's size
      elapsed_ns          since the device came up
      read, write, flush  requests, bytes, and latency (arrival to
                          completion as the model saw it: n, mean_ns,
                          min_ns, p50_ns, p90_ns, p99_ns, p99.9_ns, max_ns)
      busy_ns             time with at least one request in the device
                          (iostat's %util counts this)
      servers, service_ns the model's servers (channels, spindles) and the
                          time they spent serving
      utilisation         service_ns / (servers x elapsed_ns): how much of
                          the device's capacity was used
      in_flight           now, max, mean, and time_ns: the time spent with
                          0, 1, 2, ... requests in the device (the last
                          entry, if there are 129, is 128 or more)
      refused             requests the model could not hold (out of memory)
      reply_lag           how late the daemon answered after the model's
                          completion time (its own delay: should stay in
                          tens of microseconds)
      daemon_cpu_ns       the daemon's CPU time
      backdate_ns         see up --backdate-us
      realtime            see up --realtime
""")
MANUAL["models"] = dict(description="""\
NAME
    fio-pack device models - the models a device can follow

SYNOPSIS
    fio-pack device models [--json]

DESCRIPTION
    Lists each model: its name, what it models, the public specifications
    its parameters come from, and its parameters (key, meaning and unit,
    range, required or default). A named model stands for a spec of one of
    the kinds, with parameters from the device's datasheet. --json prints
    the daemon's own list.
""")

SUMMARY = {"up": "bring a modeled device up; prints its path",
           "down": "take a modeled device down (its data is kept)",
           "list": "the modeled devices that are up, as JSON",
           "stats": "a device's statistics, as JSON",
           "models": "the models and their sources"}


class _Parser(ManParser):
    def error(self, message):
        raise Error(f"{self.prog}: {message} (see {PROG} {self.prog.split()[-1]} --help)")


def parser(cmd=None):
    """`fio-pack device`'s parser, its manual the --help; with @cmd, that command's."""
    top = _Parser(prog=PROG, description=sections(__doc__, "NAME", "SYNOPSIS", "DESCRIPTION"),
                  epilog=sections(__doc__, "EXIT STATUS"))
    sub = top.add_subparsers(dest="command", metavar="COMMAND", title="COMMANDS",
                             help="one of the commands below",
                             description="Each command's --help (or fio-pack device help "
                                         "COMMAND) is its manual page.")
    subs = {}
    for name, summary in SUMMARY.items():
        ap = subs[name] = sub.add_parser(name, prog=f"{PROG} {name}", help=summary,
                                         **MANUAL[name])
        if name == "up":
            ap.add_argument("model", metavar="MODEL",
                            help="the model's spec (fio-pack device models)")
            ap.add_argument("--size", metavar="SIZE", help="""\
the device's size, e.g. 256m, 4g (a multiple of
4k; default 1g for a new backing file, the file's
size for an existing one)""")
            ap.add_argument("--dir", metavar="DIR", help="""\
where the backing file is (default
/var/tmp/fio-pack-devices)""")
            ap.add_argument("--name", metavar="NAME", help="""\
the device's name: its backing file is
DIR/NAME.img (default: the model's name)""")
            ap.add_argument("--backdate-us", type=backdate, default=None, metavar="N|auto",
                            help="""\
count each request as arrived N us before the
daemon read it: the kernel's share of a round
trip, so that at depth 1 a request takes the
model's time as fio sees it (docs/devices.md).
Default auto: the round trip measured by up
(a device of its own, read at depth 1 for a
fraction of a second); 0 turns it off""")
            ap.add_argument("--realtime", action="store_true", help="""\
run the daemon SCHED_FIFO, so that it keeps its
pace on a machine busy with other work (it then
preempts the workload at each request)""")
        elif name in ("down", "stats"):
            ap.add_argument("dev", metavar="DEV", help="the device's path (/dev/loopN)")
        elif name == "models":
            ap.add_argument("--json", action="store_true", help="the daemon's list, as JSON")
    return subs[cmd] if cmd else top


def backdate(text: str):
    """--backdate-us: a number of us, or auto (None: measured by up)."""
    if text == "auto":
        return None
    if not text.strip().lstrip("+-").isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: not a whole number or auto")
    return number(int, low=0, high=1000000)(text)


def cmd_up(a) -> int:
    rec = lifecycle.up(a.model, a.size, a.dir, a.name, a.backdate_us, a.realtime)
    print(rec.loop, flush=True)
    return 0


def cmd_down(a) -> int:
    lifecycle.down(a.dev)
    return 0


def state_of(rec) -> str:
    if not loop_attached(rec):
        return "detached"
    return "up" if daemon_alive(rec) else "daemon died"


def cmd_list(a) -> int:
    lifecycle.check_root()
    out = []
    for rec in devices():
        d = {"device": rec.loop, "state": state_of(rec)}
        d.update({k: v for k, v in vars(rec).items() if k != "loop"})
        out.append(d)
    print(json.dumps(out, indent=1))
    return 0


def cmd_stats(a) -> int:
    lifecycle.check_root()
    rec = find(a.dev)
    if rec is None:
        raise Error(f"{a.dev}: not a device of fio-pack device (fio-pack device list shows them)")
    if not daemon_alive(rec):
        raise Error(f"{rec.loop}: its daemon (pid {rec.pid}) died; fio-pack device down "
                    f"{rec.loop} cleans up")
    try:
        with open(f"{rec.mount}/stats") as f:
            stats = json.load(f)
    except (OSError, ValueError) as e:
        raise Error(f"{rec.loop}: cannot read its statistics: {e}") from None
    print(json.dumps({"device": rec.loop, "name": rec.name, **stats}, indent=1))
    return 0


def model_list() -> dict:
    """The daemon's list of models (its --models)."""
    moddev = moddev_path()
    try:
        r = subprocess.run([moddev, "--models"], capture_output=True, text=True)
    except OSError:
        raise Error(f"{moddev} is not built: install {lifecycle.FUSE_PACKAGES}") from None
    if r.returncode != 0:
        raise Error(f"{moddev} --models: {(r.stderr.strip().splitlines() or ['failed'])[-1]}")
    return json.loads(r.stdout)


def cmd_models(a) -> int:
    models = model_list()
    if a.json:
        print(json.dumps(models, indent=1))
        return 0
    for m in models["models"]:
        print(f"{m['name']}: {m['summary']}")
        if m.get("spec"):
            print(f"    is {m['spec']}")
        for s in m["sources"]:
            print(f"    source: {s}")
        for p in m["params"]:
            if p.get("model"):
                rng = "a member model, (SPEC)"
            else:
                rng = f"{p['min']:g} to {p['max']:g}" + (", whole" if p["integer"] else "")
            print(f"    {p['key']:<18} {p['help']} [{rng}{', required' if p['required'] else ''}]")
    return 0


COMMANDS = {"up": cmd_up, "down": cmd_down, "list": cmd_list, "stats": cmd_stats,
            "models": cmd_models}


def _terminate(signum, frame):
    # SIGTERM and SIGHUP unwind `up` as Ctrl-C does: nothing is left behind
    raise KeyboardInterrupt


def on_signals() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)


def main(argv=None) -> int:
    try:
        return run_command(argv, parser, PROG, COMMANDS, Error)
    except KeyboardInterrupt:
        # (up has undone what it did)
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
