"""Manual pages printed by argparse: the commands' --help in the layout of a
man page (sections in capitals at the margin, their text indented four
columns, one line per option with its explanation beside it).

The prose sections (NAME, SYNOPSIS, DESCRIPTION, EXAMPLES, EXIT STATUS, ...)
are the parser's description and epilog, printed as written; every option
is explained by its own help=, so an option cannot exist undocumented
(tests/tools/test_cli.py checks it)."""
import argparse
import re

# no line of a manual is longer (tests/analysis/test_analysis.py checks analyze's)
WIDTH = 90


class ManFormatter(argparse.RawTextHelpFormatter):
    """Options as a man page writes them ("-o, --output FILE"); help texts,
    description and epilog kept as written (they are laid out by hand, with
    tables and examples that rewrapping would break)."""

    def __init__(self, prog):
        super().__init__(prog, indent_increment=4, max_help_position=30, width=WIDTH)
        # one column for every page: argparse measures a command list's
        # names without their indent and would wrap them
        self._action_max_length = 24

    def _format_action(self, action):
        # a command list is the commands, one a line, without its COMMAND heading line
        if isinstance(action, argparse._SubParsersAction):
            return "".join(super(ManFormatter, self)._format_action(s)
                           for s in action._get_subactions())
        return super()._format_action(action)

    def _format_action_invocation(self, action):
        if not action.option_strings:
            return super()._format_action_invocation(action)
        text = ", ".join(action.option_strings)
        if action.nargs != 0:
            text += " " + self._format_args(action, action.dest.upper())
        return text


class ManParser(argparse.ArgumentParser):
    """An argument parser whose --help is a manual page: @description is
    printed first (from NAME on), then ARGUMENTS and OPTIONS from the
    arguments' help, then @epilog."""

    def __init__(self, **kw):
        kw.setdefault("usage", argparse.SUPPRESS)
        kw.setdefault("formatter_class", ManFormatter)
        super().__init__(**kw)
        self._positionals.title = "ARGUMENTS"
        self._optionals.title = "OPTIONS"

    def format_help(self):
        # argparse ends a section title with a colon; a man page does not
        text = super().format_help()
        return re.sub(r"^([A-Z][A-Z ()]*[A-Z)]):$", r"\1", text, flags=re.M).rstrip() + "\n"


def sections(text: str, *names: str) -> str:
    """The sections @names of the manual @text (each from its title line to
    the next title), in the order of the text."""
    parts = re.split(r"^(?=[A-Z][A-Z ()]*$)", text, flags=re.M)
    return "".join(p for p in parts if p.split("\n", 1)[0].strip() in names)
