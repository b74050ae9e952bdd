"""The io_uring modes when liburing's submission fails: one
policy for every engine, written once in engines/glue/ioq.c
(pack_ioq_submit). What is prepared stays prepared; EAGAIN and EBUSY are
retried after reaping, EINTR at once, a bounded number of times with a
growing pause; then, and at once for any other error, the requests not
submitted fail their operations with the error, said in one line.

Failures are injected by build/faultinject.so's io_uring_submit rules
(tests/faultinject/faultinject.c), which wrap liburing's io_uring_submit,
io_uring_submit_and_wait and io_uring_submit_and_wait_timeout inside the
real fio: the call returns -errno and submits nothing, as when the kernel
refuses the SQEs.
- transient failures (every second, third, fifth call) give the same fio
  counts, engine statistics and files as a fault-free run;
- a persistent one fails the job with one engine line naming the error,
  in well under a second, with little CPU time: no hang (the engines used
  to drop the pending count and then wait for ever) and no busy spin
  (dbreplay retried EAGAIN without end).
"""
import errno
import hashlib
import os
import re
import resource
import time

import pytest

from helpers.fio import run_fio
from helpers.reliability import (DBREPLAY, POSTMARK, SF_TREE, SMALLFILE, content_tree, dbr,
                                 dbr_counts, dbr_trace, injected, json_totals, opstats_counts,
                                 pm_run, run_faulty, sf, sf_layout)

ENGINES = {e.name: e for e in (SMALLFILE, POSTMARK, DBREPLAY)}

# The first rule that fires decides: runs of up to three failures in a row,
# all three retried kinds, and every submission call the engines make.
TRANSIENT = ("io_uring_submit:eagain:every=2,io_uring_submit:ebusy:every=3,"
             "io_uring_submit:eintr:every=5")
RETRIED = {"eagain", "ebusy", "eintr"}


def uring_runs(engine, base, spec):
    """The engine's io_uring runs on base/target (fio's JSON totals, the
    engine's statistics, the files left, its error lines) and the injection
    reports; spec None: no faults."""
    target = base / "target"
    target.mkdir(parents=True)
    ops = base / "ops.jsonl"
    if engine == "smallfile":
        # iodepth 8: SQEs submitted at ->commit; iodepth 1: with the wait
        runs = [sf_layout(target, tree_io_api="io_uring", iodepth=8, tree_opstats_file=ops),
                sf(target, name="read", tree_file_op="read", rw="read", tree_io_api="io_uring",
                   iodepth=1, tree_opstats_file=ops, **SF_TREE)]
        counts = lambda: opstats_counts(ops)     # noqa: E731
    elif engine == "postmark":
        runs = [pm_run(target, ops, pm_io_api="io_uring", iodepth=4),
                pm_run(target, ops, pm_io_api="io_uring", iodepth=1, pm_seed=7)]
        counts = lambda: opstats_counts(ops)     # noqa: E731
    else:
        trace = base / "db.trace"
        # full=False: the bytes of every record do not depend on the order
        dbr_trace(trace, records=800, full=False)
        runs = [dbr(trace, target, dbr_io_api="io_uring", iodepth=8, dbr_keep=1,
                    dbr_report_file=ops),
                dbr(trace, target, dbr_io_api="io_uring", iodepth=1, dbr_keep=1,
                    dbr_report_file=ops)]
        counts = lambda: dbr_counts(ops)         # noqa: E731
    results, reps = [], []
    for i, args in enumerate(runs):
        if spec is None:
            results.append(run_fio(args).ok())
        else:
            res, rep = run_faulty(args, target, spec, base / f"fi{i}.json")
            results.append(res.ok())
            reps.append(rep)
    eng = ENGINES[engine]
    return {"json": [json_totals(r) for r in results], "counts": counts(),
            "tree": content_tree(target, hashlib.sha256),
            "errors": [l for r in results for l in eng.errors(r)]}, reps


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_transient_submit_failures_change_nothing(tmp_path, engine):
    want, _ = uring_runs(engine, tmp_path / "clean", None)
    got, reps = uring_runs(engine, tmp_path / "faulty", TRANSIENT)
    for rep in reps:
        fired = {r["kind"] for r in rep["rules"] if r["injected"]}
        assert fired == RETRIED, f"not every kind was injected, the case tests less: {rep}"
    assert not got["errors"], f"errors under transient submission failures: {got['errors'][:5]}"
    assert got["json"] == want["json"], "fio's counts differ from the fault-free run"
    assert got["counts"] == want["counts"], "the engine's statistics differ"
    assert got["tree"] == want["tree"], "the files differ from the fault-free run's"


def persistent_run(engine, base, kind):
    """One io_uring job whose submissions all fail from the 4th on."""
    target = base / "target"
    target.mkdir(parents=True)
    ops = base / "ops.jsonl"
    if engine == "smallfile":
        args = sf_layout(target, tree_io_api="io_uring", iodepth=8, tree_opstats_file=ops)
    elif engine == "postmark":
        args = pm_run(target, ops, pm_io_api="io_uring", iodepth=4)
    else:
        trace = base / "db.trace"
        dbr_trace(trace, records=800, full=False)
        args = dbr(trace, target, dbr_io_api="io_uring", iodepth=8, dbr_report_file=ops)
    return run_faulty(args, target, f"io_uring_submit:{kind}:after=3", base / "fi.json",
                      timeout=60)


def cpu_of_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@pytest.mark.parametrize("kind", ["eagain", "ebusy", "eintr", "enomem"])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_persistent_submit_failure_fails_the_job(tmp_path, engine, kind):
    err = getattr(errno, kind.upper())
    outside = tmp_path / "user-file"
    outside.write_text("not the engine's\n")
    cpu, t0 = cpu_of_children(), time.monotonic()
    res, rep = persistent_run(engine, tmp_path, kind)
    wall, cpu = time.monotonic() - t0, cpu_of_children() - cpu
    assert injected(rep) >= 1, rep
    assert res.rc != 0, "a failed submission must fail the job\n" + res.describe()
    assert res.json is not None and res.jobs[0]["error"] == err, res.describe()
    eng = ENGINES[engine]
    # (postmark also says that it removed the files of the unfinished run)
    lines = [l for l in eng.errors(res) if os.strerror(err) in l or "io_uring" in l]
    # retried kinds: the first try and PACK_IOQ_SUBMIT_TRIES more; others: one
    attempts = "9 attempts" if kind in RETRIED else "1 attempt"
    want = (rf"{eng.prefix} io_uring_submit: {re.escape(os.strerror(err))} \({attempts} in "
            r"\d+ ms\): failing the \d+ requests? not submitted")
    assert len(lines) == 1 and re.fullmatch(want, lines[0]), \
        "one line naming the call and the error\n" + res.describe()
    # bounded: ~0.13 s of pauses, not a wait for ever or a spin
    assert wall < 30 and cpu < 10, f"wall {wall:.1f} s, CPU {cpu:.1f} s\n" + res.describe()
    assert outside.read_text() == "not the engine's\n"
