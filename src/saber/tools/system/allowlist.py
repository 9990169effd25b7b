"""What ``exec_command`` runs without asking: programs of the system, named on the allow-list,
with arguments that neither write, delete nor run other programs.

Each allow-list word is resolved once, through the sandbox's ``PATH``, to a binary outside the
workspace. A command runs without asking only when its ``argv[0]`` is that word, or a path that
resolves to that same binary (never a file in the workspace: ``./ls`` or ``/workspace/ls`` always
ask), and its arguments pass the program's rules (``find -delete``, ``rg --pre``, ``sort -o``...
ask). The check is made on the argv that runs: the command is then run by the binary's absolute
path, so what was checked is what runs. Untrusted text can only ever reach the argv, and the argv
alone decides: nothing a web page or a document says widens what runs without asking.

Interpreters and programs that run other programs (``python3``, ``sh``, ``env``, ``xargs``...)
are not on the default list: each of their commands asks, since their arguments are a program.
A word the configuration adds is the operator's choice and runs with the rules below, if any.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from saber.tools.system.sandbox import SANDBOX_HOME, SANDBOX_PATH

log = logging.getLogger(__name__)

DEFAULT_ALLOW = ("ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "echo", "pwd", "date", "sort", "uniq",
                 "diff", "file", "stat", "du")
"""Programs that read and print; with the rules below none of them writes, deletes or runs another."""

INTERPRETERS = frozenset({
    "python", "python3", "sh", "bash", "dash", "zsh", "ksh", "fish", "node", "nodejs", "deno", "bun", "perl", "ruby",
    "php", "lua", "tclsh", "Rscript", "awk", "gawk", "mawk", "sed", "env", "xargs", "busybox", "nice", "nohup",
    "timeout", "stdbuf", "setsid", "chroot", "sudo", "su", "doas", "unshare", "nsenter", "script",
})
"""Programs whose arguments are a program to run: listing them is warned about (each such
command may do anything the sandbox lets it)."""


@dataclass(frozen=True, kw_only=True)
class ArgRules:
    """Arguments a program may not be given without asking.

    Checks are deliberately wider than the program's own parsing: every argument is looked at,
    ``--`` included (it may be the value of an option before it), so a refused option is never
    missed; at worst a harmless command asks."""

    deny_short: str = ""
    """One-letter options refused wherever they stand in a cluster (``-uo`` holds ``-o``)."""
    value_short: str = ""
    """One-letter options that take the rest of their cluster as a value (``sort -to``: ``o``
    is the separator, not ``-o``)."""
    deny_long: tuple[str, ...] = ()
    """Long options refused, with every abbreviation GNU getopt takes (``--out`` is ``--output``)."""
    deny_words: tuple[str, ...] = ()
    """Whole arguments refused (find's actions); a word ending in ``*`` refuses all it starts."""
    max_operands: int | None = None
    """Operands at most (``uniq IN OUT`` writes OUT)."""
    operand_prefix: str | None = None
    """Every operand must start with this (``date +FORMAT``; any other operand sets the clock)."""

    def problem(self, args: Sequence[str]) -> str | None:
        """What in ``args`` needs approval, or None."""
        for arg in args:
            found = self._refused(arg)
            if found is not None:
                return found
        operands = _operands(args)
        if self.max_operands is not None and len(operands) > self.max_operands:
            return f"with {len(operands)} operands (more than {self.max_operands}: the last may be written)"
        if self.operand_prefix is not None:
            for operand in operands:
                if not operand.startswith(self.operand_prefix):
                    return f"with the operand {operand!r} (only {self.operand_prefix}... runs without asking)"
        return None

    def _refused(self, arg: str) -> str | None:
        for word in self.deny_words:
            if arg == word or (word.endswith("*") and arg.startswith(word[:-1])):
                return f"with {arg}"
        if arg.startswith("--") and len(arg) > 2:
            name = arg[2:].split("=", 1)[0]
            if any(long.startswith(name) for long in self.deny_long):
                return f"with {arg.split('=', 1)[0]}"
        elif arg.startswith("-") and len(arg) > 1 and self.deny_short:
            for letter in arg[1:]:
                if letter in self.deny_short:
                    return f"with -{letter}"
                if letter in self.value_short:
                    break
        return None


def _operands(args: Sequence[str]) -> list[str]:
    """Arguments that are not options, counted wide: everything after a ``--``, ``-`` itself, and
    the values of options given apart (``uniq -f 1 x`` counts two)."""
    out: list[str] = []
    rest = False
    for arg in args:
        if rest or arg == "-" or not arg.startswith("-"):
            out.append(arg)
        elif arg == "--":
            rest = True
    return out


RULES: dict[str, ArgRules] = {
    "find": ArgRules(deny_words=("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint*", "-fls")),
    "rg": ArgRules(deny_long=("pre", "pre-glob", "hostname-bin")),
    "sort": ArgRules(deny_short="oT", value_short="ktS", deny_long=("output", "compress-program", "temporary-directory")),
    "uniq": ArgRules(max_operands=1),
    "date": ArgRules(deny_short="s", value_short="dfrI", deny_long=("set",), operand_prefix="+"),
    "file": ArgRules(deny_short="C", deny_long=("compile",)),
}
"""The argument rules of the programs that have options which write, delete or run programs.
Keyed by the allow-list word; the others (ls, cat, grep...) only read and print."""


@dataclass(frozen=True, kw_only=True)
class Program:
    """An allow-list entry, resolved."""

    word: str
    """As configured: a name (``find``) or an absolute path."""
    path: str
    """Where the sandbox's ``PATH`` finds it: what runs."""
    real: str
    """``path`` with every symlink resolved: a path ``argv[0]`` must lead to the same."""
    prefix: tuple[str, ...] = ()
    """Leading arguments an entry of several words requires (``git status``)."""
    rules: ArgRules = field(default_factory=ArgRules)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    argv: list[str]
    """What runs: when allowed, ``argv[0]`` is the program's absolute path."""
    reason: str | None
    """Why a person must approve first; None when it runs without asking."""


class AllowList:
    """The allow-list, resolved against the system and kept out of the workspace."""

    def __init__(self, entries: Sequence[str], *, workspace: Sequence[Path], search_path: str = SANDBOX_PATH) -> None:
        self.workspace = [Path(os.path.realpath(r)) for r in workspace]
        self.skipped: list[str] = []
        """Entries that do not name a program of the system, and why."""
        self.programs: dict[str, Program] = {}
        for entry in entries:
            program = self._resolve(entry, search_path)
            if program is not None:
                self.programs.setdefault(Path(program.word).name, program)

    def _resolve(self, entry: str, search_path: str) -> Program | None:
        try:
            words = shlex.split(entry)
        except ValueError:
            words = []
        if not words:
            self.skipped.append(f"{entry!r}: not a command")
            return None
        word = words[0]
        if "/" in word and not os.path.isabs(word):
            self.skipped.append(f"{word}: a relative path; name a program, or give its absolute path")
            return None
        found = word if os.path.isabs(word) else shutil.which(word, path=search_path)
        if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
            self.skipped.append(f"{word}: no such program on {search_path}")
            return None
        real = os.path.realpath(found)
        if self._in_workspace(found) or self._in_workspace(real):
            self.skipped.append(f"{word}: {found} is in the workspace, not a program of the system")
            return None
        name = Path(word).name
        if name in INTERPRETERS or Path(real).name in INTERPRETERS:
            log.warning("exec.allow lists %s, which runs programs: each of its commands runs without asking", word)
        return Program(word=word, path=found, real=real, prefix=tuple(words[1:]), rules=RULES.get(name, ArgRules()))

    def _in_workspace(self, path: str) -> bool:
        here = Path(os.path.normpath("/" + path.lstrip("/")))  # "//workspace" is "/workspace"
        if here == Path(SANDBOX_HOME) or Path(SANDBOX_HOME) in here.parents:
            return True
        return any(here == root or root in here.parents for root in self.workspace)

    def check(self, argv: Sequence[str]) -> Verdict:
        """Whether ``argv`` runs without asking, and the argv that then runs."""
        given = list(argv)
        if not given or not given[0]:
            return Verdict(argv=given, reason="the command is empty")
        head, args = given[0], given[1:]
        name = Path(head).name
        program = self.programs.get(name)
        if "/" in head:
            if not os.path.isabs(head) or self._in_workspace(head):
                return Verdict(argv=given, reason=f"{head} is a file in the workspace, not a program of the system")
            if program is None:
                return Verdict(argv=given, reason=f"{name} is not on the allow-list")
            if os.path.realpath(head) != program.real:
                return Verdict(argv=given, reason=f"{head} is not {program.path}, the {name} on the allow-list")
        elif program is None:
            return Verdict(argv=given, reason=f"{name} is not on the allow-list")
        if list(args[: len(program.prefix)]) != list(program.prefix):
            return Verdict(argv=given, reason=f"only {shlex.join([name, *program.prefix])} runs without asking")
        problem = program.rules.problem(args[len(program.prefix):])
        if problem is not None:
            return Verdict(argv=given, reason=f"{name} {problem}: it may write, delete or run a program")
        return Verdict(argv=[program.path, *args], reason=None)

    def describe(self) -> str:
        """The allowed programs, for the tool's description."""
        return ", ".join(shlex.join([Path(p.word).name, *p.prefix]) for p in self.programs.values()) or "nothing"
