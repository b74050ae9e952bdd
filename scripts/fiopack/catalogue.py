"""The scenario catalogue (jobs/catalogue.json), its metric expressions and
fio's JSON in its output: what both the study runner (its progress line) and
the results library (every table) read, kept here so that the library does
not import the runner."""
import ast
import json
import re

from fiopack import REPO, UserError, documents, inputs

# the catalogue of the pack's scenarios, read when no --catalogue is given
DEFAULT = REPO / "jobs" / "catalogue.json"


def load(path, error=UserError) -> dict:
    """The scenario catalogue at @path, of the shape documents.CATALOGUE
    gives it, or @error in one line naming the file. Read as every input
    is (fiopack/inputs.py)."""
    data = inputs.read_whole(path, error, "a catalogue")
    try:
        doc = json.loads(data)
    except RecursionError:
        raise error(f"{path}: not a catalogue: nested too deep")
    except ValueError as e:
        raise error(f"{path}: not a catalogue: not valid JSON ({e})")
    try:
        documents.check(doc, documents.CATALOGUE)
    except documents.ShapeError as e:
        raise error(f"{path}: not a catalogue: {e}")
    return doc


def split_json(stdout: str):
    """(text before the JSON document, JSON text or None).

    fio prints error notes (and in client mode the servers' text output)
    before its JSON; the document starts at the first line that is "{".
    """
    m = re.search(r"^\{\s*$", stdout, re.M)
    start = m.start() if m else stdout.find("{")
    if start < 0:
        return stdout, None
    return stdout[:start], stdout[start:]


def is_precondition(jobname: str) -> bool:
    """A job named precondition* lays out what the measured jobs read (the
    pack's job files' convention, as `sysbench prepare`): the study writes
    it once whatever the sweep, and its figures are not measured ones."""
    return str(jobname or "").lower().startswith("precondition")


def eval_metric(expr: str, entry: dict):
    """Evaluates a catalogue metric ("read.bw_bytes / 1048576") on one job entry."""
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
            return node.value
        if isinstance(node, ast.Name):
            return entry[node.id]
        if isinstance(node, ast.Attribute):
            return ev(node.value)[node.attr]
        if isinstance(node, ast.Subscript):
            return ev(node.value)[ev(node.slice)]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
                   ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}
            if type(node.op) in ops:
                return ops[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError("unsupported expression")
    return ev(ast.parse(expr, mode="eval"))
