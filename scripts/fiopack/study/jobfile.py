"""Job files: reading them as fio does (sections, includes, options) and
rewriting one into the fully resolved copy a run stores beside its result
(variables, sweep and --set options, engines and paths made absolute,
preconditions kept whole)."""
import re
import subprocess
from pathlib import Path

from fiopack import REPO
from fiopack.catalogue import is_precondition
from fiopack.study.common import (ENGINE_NAME_RE, ENGINE_RE, IOLOG_RE, KEY_RE, StudyError,
                                  VAR_RE, repo_relative)


# Job files: reading, rewriting
# ---------------------------------------------------------------------------

def is_comment(line: str) -> bool:
    """fio's is_empty_or_comment(): blank, or first non-blank is ; or #."""
    s = line.strip()
    return not s or s[0] in ";#"


def read_job_lines(path: Path, nested=False) -> list:
    """The job file's lines with include directives replaced by the file's lines."""
    out = []
    for line in path.read_text().splitlines():
        s = line.strip()
        if not is_comment(line) and s.startswith("include") and not s.startswith("["):
            name = s[len("include") + 1:].strip()
            inc = Path(name)
            if not inc.is_absolute():
                # fio: as given (from its working directory, the repository
                # root here) if it exists, else beside the including file
                inc = REPO / name if (REPO / name).exists() else path.parent / name
            if not inc.is_file():
                raise StudyError(f"job file {path}: include {name}: not found")
            out.append(f"; fio-pack study: inlined include {name}")
            out += read_job_lines(inc, nested=True)
            continue
        out.append(line)
    return out


def parse_sections(lines: list) -> tuple:
    """(preamble lines, [[name, header line, [lines]]])."""
    pre, sections = [], []
    for line in lines:
        s = line.strip()
        if not is_comment(line) and s.startswith("["):
            sections.append([s[1:s.find("]")] if "]" in s else s[1:], line, []])
        elif sections:
            sections[-1][2].append(line)
        else:
            pre.append(line)
    return pre, sections


def line_key(line: str):
    if is_comment(line):
        return None
    m = KEY_RE.match(line)
    return m.group(1) if m else None


def set_options(body: list, overrides: list, add: bool) -> list:
    """Sets OPTION=VALUE in a section body.

    overrides: [(names, "option=value")], names the option and its aliases.
    An existing line for the option is replaced in place; if there is none
    and add is true, the line is added after the section's last option.
    """
    body = list(body)
    for names, text in overrides:
        found = False
        for i, line in enumerate(body):
            if line_key(line) in names:
                body[i] = text
                found = True
        if not found and add:
            last = max((i for i, l in enumerate(body) if not is_comment(l)), default=-1)
            body.insert(last + 1, text)
    return body


# Options that cut a job short. A precondition must write all it is sized
# for: a measured job that reads space never written reads preallocated
# extents or holes, which no disk serves (a sysbench-rndrd precondition cut
# to 492 MiB of 2 GiB by --set runtime=2 gave 910 MiB/s, fully written files
# 180-240 MiB/s on the same device).
SHORTENING = {"runtime": "runtime=0", "timeout": "runtime=0", "time_based": "time_based=0",
              "number_ios": "number_ios=0", "io_size": "io_size=0", "io_limit": "io_size=0"}


def is_concurrency(names) -> bool:
    """Options that set how many writers a job has and how deep each
    queues: a sweep or --set of them is the measured job's. numjobs=N
    clones each write a precondition's whole size (a sysbench-rndrd sweep
    to threads=16 wrote 16 x 256 MiB before every run, 9.4-11.6 s against
    1.6 s at 1 thread); the precondition is one writer, as `sysbench
    prepare` is, at the job file's own queue depth."""
    return any(n == "numjobs" or n.startswith("iodepth") for n in names)


def precondition_body(body: list, glob: list, overrides: list) -> list:
    """A precondition section's body: the overrides that neither shorten
    it nor set its concurrency, the neutral value of every shortening
    option it would otherwise have or inherit from [global], numjobs=1,
    and the job file's own queue depth where an override replaced the
    [global] line it inherits."""
    keep = [(names, text) for names, text in overrides
            if not (set(names) & set(SHORTENING)) and not is_concurrency(names)]
    inherited = {line_key(l) for l in glob + body} | \
        {n for names, _ in overrides for n in names}
    own = {line_key(l) for l in body}
    body = [l for l in body if line_key(l) not in SHORTENING and line_key(l) != "numjobs"]
    neutral = []
    for key, text in SHORTENING.items():
        if key in inherited and text not in neutral:
            neutral.append(text)
    if "numjobs" in inherited:
        neutral.append("numjobs=1")
    for names, _ in overrides:
        if is_concurrency(names) and "numjobs" not in names and not own & set(names):
            neutral += [l.strip() for l in glob if line_key(l) in names][-1:]
    return set_options(body + neutral, keep, add=True)


SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b?)\s*$", re.I)


def fio_size(text: str):
    """fio's size value in bytes (kb_base=1024), or None for what is not an
    absolute size (a percentage, a range, a variable left empty)."""
    m = SIZE_RE.match(text or "")
    if not m:
        return None
    return int(m.group(1)) * 1024 ** " kmgtp".index(m.group(2).lower() or " ")


def precondition_sizes(jobtext: str) -> dict:
    """{precondition section: the bytes it must write, or None if its size is
    not a plain number (a device's whole size, a percentage)}."""
    _, sections = parse_sections(jobtext.splitlines())
    glob, out = {}, {}
    for name, _, body in sections:
        opts = {}
        for line in body:
            key = line_key(line)
            if key:
                opts[key] = line.split("=", 1)[1].strip() if "=" in line else ""
        if name == "global":
            glob.update(opts)
        elif is_precondition(name):
            merged = dict(glob, **opts)
            size = fio_size(merged.get("size", ""))
            io_size = fio_size(merged.get("io_size", merged.get("io_limit", "")))
            out[name] = io_size if io_size else size
    return out


def precondition_problem(jobtext: str, entries: list):
    """What is wrong with a run whose precondition did not write all it is
    sized for (an error, or fewer bytes), or None."""
    want = precondition_sizes(jobtext)
    for e in entries:
        name = e.get("jobname", "")
        if name not in want:
            continue
        done = (e.get("write") or {}).get("io_bytes", 0)
        if e.get("error"):
            return (f"precondition {name} ended with error {e['error']} after {done} bytes: "
                    "the measured jobs would read space never written")
        if want[name] and done < want[name]:
            return (f"precondition {name} wrote {done} of {want[name]} bytes: the measured "
                    "jobs would read space never written")
    return None


def names_target_file(line: str, target_vars) -> bool:
    """True for a directory= line that takes the target (a target variable):
    the pack's job files give their file a name of their own (filename=)
    in the target's directory (directory=${FIO_DIR}:/tmp)."""
    return line_key(line) == "directory" and any("${" + v + "}" in line for v in target_vars)


def derive_job(paths: list, overrides: list, variables: dict, engine_dir: str,
               header: list, repo_dir: str = None, file_target: str = None,
               target_vars=()) -> str:
    """The fully resolved job text of one run (see the module doc).

    @file_target: a file or device target, for a job that names its file
    in the target's directory (names_target_file): the target replaces the
    job's file, as filename= with no directory= (which fio would put
    before it: /dev/sdb/fio-pack.x.dat). A job that takes the target as
    filename=${VAR} gets it by the substitution."""
    files = [(p, parse_sections(read_job_lines(p))) for p in paths]
    out = ["; " + h if h else ";" for h in header]
    if len(files) == 1:
        pre, sections = files[0][1]
        out += pre
        glob = [l for name, _, body in sections if name == "global" for l in body]
        for name, head, body in sections:
            out.append(head)
            if is_precondition(name):
                out += precondition_body(body, glob, overrides)
            else:
                out += set_options(body, overrides, add=(name != "global"))
    else:
        # fio resets [global] defaults between job files and puts a stonewall
        # before each later file's first job: copy each file's global options
        # into its own job sections so one file keeps that meaning.
        for k, (p, (pre, sections)) in enumerate(files):
            out.append(f"; ---- {repo_relative(p)} ----")
            out += pre
            glob, first = [], True
            for name, head, body in sections:
                if name == "global":
                    glob += [l for l in body if not is_comment(l)]
                    continue
                out.append(head)
                extra = ["stonewall"] if k > 0 and first else []
                first = False
                if is_precondition(name):
                    out += precondition_body(extra + glob + body, [], overrides)
                else:
                    out += set_options(extra + glob + body, overrides, add=True)
    as_file = file_target is not None and any(names_target_file(l, target_vars) for l in out)
    resolved = []
    for line in out:
        if as_file and names_target_file(line, target_vars):
            resolved.append("; fio-pack study: directory= left out, the target is filename=")
            continue
        if as_file and line_key(line) == "filename":
            line = f"filename={file_target}"
        if not is_comment(line) and not line.strip().startswith("["):
            # the engine directory first: it is the study's, not a variable's
            line = ENGINE_RE.sub(lambda m: m.group(1) + engine_dir.rstrip("/") + "/", line)
            line = VAR_RE.sub(lambda m: variables.get(m.group(1), ""), line)
            m = IOLOG_RE.match(line)
            if m and not m.group(2).startswith("/") and (REPO / m.group(2)).exists():
                # the replay log is read by the fio that runs the job (a
                # server's, whose working directory is not the repository)
                line = m.group(1) + (repo_dir or str(REPO)).rstrip("/") + "/" + m.group(2)
        resolved.append(line)
    return "\n".join(resolved) + "\n"


def job_variables(paths: list) -> list:
    """The ${VAR}s of the job files, but the engines' directory, which the
    study sets itself (--engine-dir)."""
    names = []
    for p in paths:
        for line in read_job_lines(p):
            if not is_comment(line):
                line = ENGINE_RE.sub("", line)
                for m in VAR_RE.finditer(line):
                    if m.group(1) not in names:
                        names.append(m.group(1))
    return names


def job_engines(paths: list) -> list:
    names = []
    for p in paths:
        for line in read_job_lines(p):
            m = ENGINE_NAME_RE.match(line) if not is_comment(line) else None
            if m and m.group(1) not in names:
                names.append(m.group(1))
    return names


_alias_cache = {}


def option_names(fio: str, option: str) -> set:
    """The option's name and its alias as fio's --cmdhelp knows them."""
    if option not in _alias_cache:
        names = {option}
        try:
            p = subprocess.run([fio, f"--cmdhelp={option}"], capture_output=True,
                               text=True, timeout=30)
            lines = [l for l in p.stdout.splitlines() if l.strip()]
            # "  rw: IO direction" / "  alias: readwrite" / "  type: ..."
            m = re.match(r"^\s*(\S+): ", lines[0]) if lines else None
            if m:
                names.add(m.group(1))
                for line in lines[1:]:
                    m = re.match(r"^\s*alias:\s*(\S+)", line)
                    if m:
                        names.add(m.group(1))
        except (OSError, subprocess.TimeoutExpired):
            pass
        _alias_cache[option] = names
    return _alias_cache[option]


# ---------------------------------------------------------------------------
