"""What a command writes into a fio job file from a user's text (a study's
--set values and targets, a generator's --data-dir): fio reads some
characters otherwise than they are written, so a value holding one would
make the job file say something the command did not. Checked here once,
for every command that writes job text."""
from fiopack import UserError


class JobTextError(UserError):
    """A user's text that cannot go into a job file as it is."""


# What fio reads otherwise than it is written, in a job file's option line:
# a line break starts a new line (a new option, a new [job section]); ";"
# and "#" start a comment, cutting the value there; other control
# characters are stripped or split it.
JOB_TEXT_BAD = {"\n": "a line break (fio would read a new option or [section] line)",
                "\r": "a carriage return (fio would read a new line)",
                ";": "a ';' (fio cuts the value there: a comment)",
                "#": "a '#' (fio cuts the value there: a comment)"}


def check(text: str, what: str, path: bool = False, error=JobTextError) -> str:
    """@text, refused with @error (naming @what, the option or variable)
    when it holds what fio would read otherwise in a job file; a @path also
    must not hold ':', which fio's directory= and filename= read as a
    separator between several paths, nor '$', which fio substitutes."""
    for c in text:
        why = JOB_TEXT_BAD.get(c)
        if why is None and (c < " " or c == "\x7f"):
            why = f"a control character ({c!r})"
        if why is None and path and c == ":":
            why = "a ':' (fio's directory= and filename= read it as a list of paths)"
        # a path is never an expression: fio replaces ${VAR} by the environment's
        # and evaluates $ncpus, $pagesize, $mb_memory (a --set value may use them)
        if why is None and path and c == "$":
            why = "a '$' (fio replaces ${VAR}, $ncpus, $pagesize and $mb_memory in a job file)"
        if why:
            raise error(f"{what}: {text!r} holds {why}")
    return text
