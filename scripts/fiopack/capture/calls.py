"""The converter's handler of each system call (c_NAME, which call()
finds by name): what the call does to the capture's names, descriptors,
file positions and sizes, and the records it makes through emit(). A
mixin of Converter (convert.py), which holds the state and the records."""
import os
import re

from fiopack.capture.model import Ofd, Obj
from fiopack.capture.rules import MAX_IO, NONFILE_PREFIXES
from fiopack.capture.strace import Fd, LineError, Result, parse_fd, parse_int, parse_str
from fiopack.trace import dbtrace as dt  # the format's reader/writer

# the most one read or write call (or one AIO or io_uring request, a 32-bit
# length) can transfer
MAX_CALL = 1 << 32


class Calls:
    def call(self, seq, pid, t, name, args, res: Result):
        h = getattr(self, "c_" + name, None)
        if h is None:
            self.ignored.add(f"{name} calls")
            return
        if res.error is not None or res.value is None:
            why = res.error if res.error else "?"
            if why in ("?", "ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND",
                       "ERESTART_RESTARTBLOCK"):
                self.dropped.add(f"{name} calls interrupted or without a result")
            else:
                self.dropped.add(f"failed {name} calls (-1 {why})")
            return
        try:
            h(seq, pid, t, args, res)
        except (IndexError, TypeError, ValueError) as e:
            raise LineError(f"{name}: unexpected arguments ({type(e).__name__}: {e})")

    def _fd(self, args, i) -> Fd:
        f = parse_fd(args[i])
        if f is None:
            raise LineError(f"expected a descriptor, found '{args[i][:40]}'")
        return f

    def _str(self, args, i) -> str:
        s = parse_str(args[i])
        if s is None:
            raise LineError(f"expected a quoted path, found '{args[i][:40]}'")
        return s

    def _int(self, args, i) -> int:
        v = parse_int(args[i])
        if v is None:
            raise LineError(f"expected a number, found '{args[i][:40]}'")
        # a system call's arguments are 64-bit; offsets and sizes beyond are
        # a corrupt line, and would make a trace no reader takes
        if not -(1 << 63) <= v <= dt.MAX_OFFSET:
            raise LineError(f"a number of {len(args[i].strip())} digits: beyond 64 bits")
        return v

    # open, openat, creat: a new open file description
    def _open(self, seq, pid, t, dirfd, path, flags, res):
        if res.value is None or res.value < 0:
            raise LineError("the result of an open is not a descriptor")
        tab = self.table(pid)
        if res.fd is not None and res.fd.kind == "other":
            tab[res.value] = Ofd(None, None)
            return
        ab = res.fd.path if res.fd is not None and res.fd.kind == "path" else \
            self.resolve(pid, dirfd, path)
        if ab.startswith(NONFILE_PREFIXES):
            tab[res.value] = Ofd(None, None)
            self.ignored.add("opens of devices and /proc, /sys files")
            return
        fl = set(flags.split("|"))
        if "O_TMPFILE" in fl:
            self._open_unnamed(seq, pid, t, self.resolve(pid, dirfd, path), res.value, fl)
            return
        creat = "O_CREAT" in fl
        excl = "O_EXCL" in fl
        obj = self.ns.get(ab)
        created = False
        if obj is None:
            listed = self.listing is not None and ab not in self.touched and \
                (ab in self.listing or ab in self.roots)
            if listed or (not creat and not (self.listing is not None and ab in self.touched)):
                obj = self.lookup(ab)
            elif self.listing is None and creat and not excl and ab not in self.touched:
                obj = self.lookup(ab)       # no listing: cannot tell, take it as existing
                self.mapped.add("files opened with O_CREAT and no listing to tell whether "
                                "they existed, taken as existing")
            else:
                obj = self.new_obj(ab, False, 0)
                created = creat
                self.touched.add(ab)
        elif obj.dead:
            obj = self.new_obj(ab, False, 0)
            created = creat
        if "O_DIRECTORY" in fl:
            obj.is_dir = True
            if obj.tf is not None:
                obj.tf.is_dir = True
        if created:
            self.emit(seq, t, pid, obj, "create")
        if "O_TRUNC" in fl and not created and obj.cur != 0 and not obj.is_dir \
                and ("O_WRONLY" in fl or "O_RDWR" in fl):
            obj.bumpable = False
            obj.cur = 0
            self.emit(seq, t, pid, obj, "truncate", 0)
        tab[res.value] = Ofd(obj, 0, "O_APPEND" in fl, "O_DIRECT" in fl)

    def _open_unnamed(self, seq, pid, t, d: str, fd: int, fl: set):
        """open(DIR, O_TMPFILE): a file with no name in DIR, gone at its last
        close (MariaDB's and InnoDB's sort and temporary files). A file of
        its own in the trace, role temp, named DIR/#tmpfile.N (N counts them),
        created and unlinked at once: the replay does its I/O on the open
        file, as the database did."""
        self.ntmpfiles += 1
        o = self.new_obj(os.path.join(d, f"#tmpfile.{self.ntmpfiles}"), False, 0, in_ns=False)
        o.unnamed = True
        if o.tf is not None:
            o.tf.temp = True
        self.emit(seq, t, pid, o, "create")
        self.emit(seq, t, pid, o, "unlink")
        o.dead = True
        self.table(pid)[fd] = Ofd(o, 0, "O_APPEND" in fl, "O_DIRECT" in fl)

    def c_open(self, seq, pid, t, args, res):
        self._open(seq, pid, t, None, self._str(args, 0), args[1], res)

    def c_openat(self, seq, pid, t, args, res):
        self._open(seq, pid, t, self._fd(args, 0), self._str(args, 1), args[2], res)

    def c_openat2(self, seq, pid, t, args, res):
        m = re.search(r"flags=([A-Z0-9_|]+)", args[2])
        self._open(seq, pid, t, self._fd(args, 0), self._str(args, 1),
                   m.group(1) if m else "", res)

    def c_creat(self, seq, pid, t, args, res):
        self._open(seq, pid, t, None, self._str(args, 0), "O_CREAT|O_WRONLY|O_TRUNC", res)

    def c_close(self, seq, pid, t, args, res):
        self.table(pid).pop(self._fd(args, 0).num, None)

    def c_close_range(self, seq, pid, t, args, res):
        lo, hi = self._int(args, 0), parse_int(args[1])
        hi = (1 << 32) if hi is None else hi
        if "CLOSE_RANGE_CLOEXEC" in args[2]:
            return
        tab = self.table(pid)
        for fd in [k for k in tab if lo <= k <= hi]:
            del tab[fd]

    def _dup(self, pid, old: Fd, res: Result):
        src = self.fd_obj(pid, old, "dup", count=False)
        if src is not None and res.value is not None and res.value >= 0:
            self.table(pid)[res.value] = src

    def c_dup(self, seq, pid, t, args, res):
        self._dup(pid, self._fd(args, 0), res)

    c_dup2 = c_dup
    c_dup3 = c_dup

    def c_fcntl(self, seq, pid, t, args, res):
        if args[1] in ("F_DUPFD", "F_DUPFD_CLOEXEC"):
            self._dup(pid, self._fd(args, 0), res)
        elif args[1] == "F_SETFL" and len(args) > 2:
            ofd = self.fd_obj(pid, self._fd(args, 0), "fcntl", count=False)
            if ofd is not None:
                ofd.direct = "O_DIRECT" in args[2].split("|")
        else:
            self.ignored.add("fcntl calls other than F_DUPFD (locks, flags)")

    def c_chdir(self, seq, pid, t, args, res):
        self.cwd[pid] = self.resolve(pid, None, self._str(args, 0))

    def c_fchdir(self, seq, pid, t, args, res):
        fd = self._fd(args, 0)
        if fd.kind == "path":
            self.cwd[pid] = fd.path
        else:
            ofd = self.table(pid).get(fd.num)
            if ofd is not None and ofd.obj is not None:
                self.cwd[pid] = ofd.obj.path

    def _clone(self, pid, child, share_files):
        if child is None or child <= 0:
            return
        parent = self.table(pid)
        mine = self.tables.get(child)
        if share_files:
            if mine:
                parent.update(mine)
            self.tables[child] = parent
        else:
            t = dict(parent)
            if mine:
                t.update(mine)
            self.tables[child] = t
        cwd = self.cwd.get(pid) or self.procinfo.get(pid, {}).get("cwd")
        if child not in self.cwd and cwd:
            self.cwd[child] = cwd

    def c_clone(self, seq, pid, t, args, res):
        self._clone(pid, res.value, any("CLONE_FILES" in a for a in args))

    def c_clone3(self, seq, pid, t, args, res):
        self._clone(pid, res.value, "CLONE_FILES" in args[0])

    def c_fork(self, seq, pid, t, args, res):
        self._clone(pid, res.value, False)

    c_vfork = c_fork

    # names
    def _rename(self, seq, pid, t, old, new, flags=""):
        self.mapped.add("renames (a renamed file has its new name in the trace, unless another "
                        "file of the trace has it)")
        self.touched.add(old)
        self.touched.add(new)
        src = self.ns.pop(old, None)
        if src is None:
            src = self.lookup(old)
            self.ns.pop(old, None)
        if "RENAME_EXCHANGE" in flags:
            dst = self.ns.get(new)
            if dst is None:
                dst = self.lookup(new)
            self.ns[old] = dst
            dst.path = old
            self.ns[new] = src
            src.path = new
            return
        victim = self.ns.get(new)
        if victim is None and self.listing is not None and new in self.listing:
            victim = self.lookup(new)
        if victim is not None and victim is not src:
            if victim.is_dir:
                self.emit(seq, t, pid, victim, "unlink")
            else:
                self.emit(seq, t, pid, victim, "unlink")
            victim.dead = True
            self.gone[new] = victim
        self.ns[new] = src
        src.path = new
        self.take_name(src)
        # a directory renamed: the names below it move with it
        pre = old + "/"
        moved = [p for p in self.ns if p.startswith(pre)]
        for p in moved:
            o = self.ns.pop(p)
            o.path = new + p[len(old):]
            self.ns[o.path] = o
            self.touched.add(p)
            self.touched.add(o.path)

    def take_name(self, o: Obj):
        """A renamed file is named in the trace by its new name: what a
        database makes under a temporary name and renames into place (a
        PostgreSQL WAL segment made as pg_wal/xlogtemp.PID) is known by the
        name it then has. Not when another file of the trace has that name
        (a file renamed over another, as PostgreSQL 15's statistics file
        each time): the two stay apart, and a name made anew each time does
        not become a new file each time; nor for a name several files had in
        turn, or a directory (the names below it keep theirs)."""
        tf = o.tf
        if tf is None or tf.owner is not o or tf.shared or tf.is_dir or o.is_dir:
            return
        r = self.rel(o.path)
        if r is None:
            if self.outside != "keep":
                return
            r = f"{self.outside_prefix}/{o.path.lstrip('/')}" if self.outside_prefix else \
                o.path.lstrip("/")
        if r in self.tfiles or dt.path_check(r, "data"):
            return
        del self.tfiles[tf.path]
        tf.path, tf.bad = r, None
        self.tfiles[r] = tf

    def c_rename(self, seq, pid, t, args, res):
        self._rename(seq, pid, t, self.resolve(pid, None, self._str(args, 0)),
                     self.resolve(pid, None, self._str(args, 1)))

    def c_renameat(self, seq, pid, t, args, res):
        self._rename(seq, pid, t, self.resolve(pid, self._fd(args, 0), self._str(args, 1)),
                     self.resolve(pid, self._fd(args, 2), self._str(args, 3)))

    def c_renameat2(self, seq, pid, t, args, res):
        self._rename(seq, pid, t, self.resolve(pid, self._fd(args, 0), self._str(args, 1)),
                     self.resolve(pid, self._fd(args, 2), self._str(args, 3)),
                     args[4] if len(args) > 4 else "")

    def c_unlink(self, seq, pid, t, args, res):
        self.unlink_obj(seq, t, pid, self.resolve(pid, None, self._str(args, 0)), False)

    def c_unlinkat(self, seq, pid, t, args, res):
        self.unlink_obj(seq, t, pid, self.resolve(pid, self._fd(args, 0), self._str(args, 1)),
                        "AT_REMOVEDIR" in args[2])

    def c_rmdir(self, seq, pid, t, args, res):
        self.unlink_obj(seq, t, pid, self.resolve(pid, None, self._str(args, 0)), True)

    def _mkdir(self, seq, pid, t, path):
        o = self.ns.get(path)
        if o is not None and not o.dead:
            o.is_dir = True
            return
        self.touched.add(path)
        o = self.new_obj(path, False, 0, is_dir=True)
        self.emit(seq, t, pid, o, "create")

    def c_mkdir(self, seq, pid, t, args, res):
        self._mkdir(seq, pid, t, self.resolve(pid, None, self._str(args, 0)))

    def c_mkdirat(self, seq, pid, t, args, res):
        self._mkdir(seq, pid, t, self.resolve(pid, self._fd(args, 0), self._str(args, 1)))

    # sizes
    def _truncate(self, seq, pid, t, obj, size):
        if obj is None or size < 0:
            return
        if size < obj.cur:
            obj.bumpable = False
        obj.cur = size
        self.emit(seq, t, pid, obj, "truncate", size)

    def c_ftruncate(self, seq, pid, t, args, res):
        ofd = self.fd_obj(pid, self._fd(args, 0), "ftruncate")
        if ofd is not None:
            self._truncate(seq, pid, t, ofd.obj, self._int(args, 1))

    def c_truncate(self, seq, pid, t, args, res):
        ab = self.resolve(pid, None, self._str(args, 0))
        self._truncate(seq, pid, t, self.lookup(ab), self._int(args, 1))

    def c_fallocate(self, seq, pid, t, args, res):
        ofd = self.fd_obj(pid, self._fd(args, 0), "fallocate")
        if ofd is None:
            return
        mode, off, n = args[1], self._int(args, 2), self._int(args, 3)
        obj = ofd.obj
        if "FALLOC_FL_PUNCH_HOLE" in mode:
            if off >= obj.cur or n <= 0:
                self.dropped.add("fallocate punch holes beyond the end of the file")
                return
            self.emit(seq, t, pid, obj, "trim", off, min(n, obj.cur - off))
            return
        if mode.strip() == "0" and off + n > obj.cur:
            self.mapped.add("fallocate calls that extend a file, recorded as a truncate to "
                            "the new size (no allocation in the format)")
            self._truncate(seq, pid, t, obj, off + n)
            return
        self.lost(f"fallocate calls with mode {mode} (no equivalent in the format)")

    # durability
    def _sync(self, seq, pid, t, args, op):
        ofd = self.fd_obj(pid, self._fd(args, 0), op)
        if ofd is None:
            return
        obj = ofd.obj
        if op == "fdatasync" and (obj.is_dir or (obj.tf is not None and obj.tf.is_dir)):
            op = "fsync"
            self.mapped.add("fdatasyncs of directories, recorded as fsync")
        self.emit(seq, t, pid, obj, op)

    def c_fsync(self, seq, pid, t, args, res):
        self._sync(seq, pid, t, args, "fsync")

    def c_fdatasync(self, seq, pid, t, args, res):
        self._sync(seq, pid, t, args, "fdatasync")

    def c_sync_file_range(self, seq, pid, t, args, res):
        ofd = self.fd_obj(pid, self._fd(args, 0), "sync_file_range")
        if ofd is None:
            return
        obj = ofd.obj
        off, n = self._int(args, 1), self._int(args, 2)
        if off >= obj.cur and not (off == 0 and n == 0):
            self.dropped.add("sync_file_ranges beyond the end of the file")
            return
        if n and off + n > obj.cur:
            n = obj.cur - off
        self.emit(seq, t, pid, obj, "sync_file_range", off, n)

    def c_syncfs(self, seq, pid, t, args, res):
        self.lost("syncfs calls (no equivalent in the format)")

    # data
    def _io(self, seq, pid, t, fd: Fd, op, off, n, what):
        ofd = self.fd_obj(pid, fd, what)
        if ofd is None:
            return
        obj = ofd.obj
        if obj.is_dir:
            # a descriptor that names a directory and reads or writes data: a
            # file made with O_TMPFILE before the capture (iocap names it by
            # its directory), whose I/O has no file to go to
            self.lost(f"{what} calls on descriptors that name a directory (files made "
                      "with O_TMPFILE before the capture)")
            return
        if n > MAX_CALL:
            # the record is split into MAX_IO pieces below: a corrupt length
            # would make billions of them
            raise LineError(f"{what} of {n} bytes: more than one call transfers "
                            f"({MAX_CALL})")
        if n <= 0:
            if op == "read":
                self.dropped.add(f"{what} calls at the end of the file (0 bytes)")
            else:
                self.dropped.add(f"{what} calls of 0 bytes")
            return
        if off is None:                    # read, write, readv, writev: the file position
            if op == "write" and ofd.append:
                ofd.pos = obj.cur
            if ofd.pos is None:
                if obj.tf is None:
                    self.emit(seq, t, pid, obj, op)     # counted as outside
                    return
                self.lost(f"{what} calls at an unknown file position (a descriptor "
                          "opened before the capture)")
                return
            off = ofd.pos
            ofd.pos += n
        if off < 0 or off > dt.MAX_OFFSET - n:
            raise LineError(f"{what} at offset {off}: beyond the largest file offset")
        if obj.tf is not None:
            if ofd.direct:
                obj.tf.direct += 1
            else:
                obj.tf.buffered += 1
        self.saw_end(obj, off + n, op == "read")
        while n > 0:
            k = min(n, MAX_IO)
            self.emit(seq, t, pid, obj, op, off, k)
            off += k
            n -= k

    def c_pread64(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "read", self._int(args, 3), res.value, "pread64")

    def c_pwrite64(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "write", self._int(args, 3), res.value,
                 "pwrite64")

    def c_read(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "read", None, res.value, "read")

    def c_write(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "write", None, res.value, "write")

    c_readv = c_read
    c_writev = c_write

    def c_preadv(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "read", self._int(args, 3), res.value, "preadv")

    def c_pwritev(self, seq, pid, t, args, res):
        self._io(seq, pid, t, self._fd(args, 0), "write", self._int(args, 3), res.value,
                 "pwritev")

    def c_preadv2(self, seq, pid, t, args, res):
        off = self._int(args, 3)
        self._io(seq, pid, t, self._fd(args, 0), "read", None if off == -1 else off, res.value,
                 "preadv2")

    def c_pwritev2(self, seq, pid, t, args, res):
        off = self._int(args, 3)
        self._io(seq, pid, t, self._fd(args, 0), "write", None if off == -1 else off,
                 res.value, "pwritev2")

    def c_lseek(self, seq, pid, t, args, res):
        ofd = self.fd_obj(pid, self._fd(args, 0), "lseek")
        if ofd is None:
            return
        ofd.pos = res.value
        self.ignored.add("lseek calls (file positions tracked)")
        if args[2] == "SEEK_END" and parse_int(args[1]) == 0:
            self.saw_end(ofd.obj, res.value, True)    # the file's size, as seen then

    _IOCB = re.compile(r"\{[^{}]*\}")

    def c_io_submit(self, seq, pid, t, args, res):
        """Linux native AIO: strace shows the requests (with -s large enough
        to print the array) at submission, never their completion."""
        self._warn("io_submit", "io_submit (Linux native AIO): requests are recorded when "
                   "submitted, with their requested length; strace cannot see their "
                   "completion, and requests it does not print (strace -s too small) are "
                   "lost. The BPF capture (--tracer bpf) sees each request and its "
                   "completion.")
        if res.value is None or res.value < 0:
            self.lost("io_submit calls that failed or whose result strace did not see")
            return
        done = 0
        self.lat = None         # io_submit's own duration, not its requests' completion
        for m in self._IOCB.finditer(args[2] if len(args) > 2 else ""):
            if done >= res.value:
                break
            body = m.group(0)
            op = re.search(r"aio_lio_opcode=IOCB_CMD_([A-Z]+)", body)
            fdm = re.search(r"aio_fildes=(\d+(?:<.*?>)?)(?:,|\})", body)
            if not op or not fdm:
                continue
            done += 1
            fd = parse_fd(fdm.group(1))
            kind = op.group(1)
            nb = re.search(r"aio_nbytes=(\d+)", body)
            of = re.search(r"aio_offset=(\d+)", body)
            if kind in ("PREAD", "PWRITE") and nb and of:
                before = self.sub
                self._io(seq, pid, t, fd, "read" if kind == "PREAD" else "write",
                         int(of.group(1)), int(nb.group(1)), "io_submit")
                if self.sub > before:
                    self.unseen.add("io_submit requests recorded at submission with their "
                                    "requested length: their completion (time, short "
                                    "transfer, error) is invisible to strace")
            elif kind in ("FSYNC", "FDSYNC"):
                self._sync(seq, pid, t, [fdm.group(1)], "fsync" if kind == "FSYNC"
                           else "fdatasync")
            else:
                self.lost(f"io_submit requests IOCB_CMD_{kind}")
        if res.value > done:
            self.lost("io_submit requests strace did not print (the BPF capture, "
                      "--tracer bpf, sees them)", res.value - done)

    def c_io_uring_enter(self, seq, pid, t, args, res):
        self._warn("io_uring", "io_uring_enter: the I/O submitted through io_uring is "
                   "invisible to strace and missing from the trace (the BPF capture, "
                   "--tracer bpf, sees it)")
        self.lost("io_uring_enter calls: the reads, writes and syncs submitted through "
                  "io_uring are invisible to strace and none is in the trace (capture with "
                  "--tracer bpf)")

    def c_copy_file_range(self, seq, pid, t, args, res):
        self.lost("copy_file_range calls (no equivalent in the format)")

    def c_sendfile(self, seq, pid, t, args, res):
        self.lost("sendfile calls (no equivalent in the format)")

