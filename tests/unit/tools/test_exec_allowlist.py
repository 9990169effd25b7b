"""What exec_command runs without asking (#28): programs of the system with harmless arguments.
Every attack of the issue asks for approval; the everyday read-only commands do not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from saber.tools.base import Tool
from saber.tools.system.allowlist import DEFAULT_ALLOW, AllowList
from saber.tools.system.commands import CommandPolicy, exec_tool
from saber.tools.system.workspace import Workspace

WORKSPACE = Path("/srv/saber-test-workspace")


@pytest.fixture
def tool(tmp_path: Path) -> Tool:
    return exec_tool(Workspace([tmp_path]), CommandPolicy())


ALLOW = AllowList(DEFAULT_ALLOW, workspace=[WORKSPACE])


@pytest.mark.parametrize("command", [
    "ls -la", "cat notes.txt", "grep -rn TODO .", "rg -n --glob '*.py' import", "find . -name '*.txt' -print",
    "sort -u -k2 -t, data.csv", "sort -to data.csv", "uniq -c data.txt", "date +%Y-%m-%d", "date --date=tomorrow",
    "date -Iseconds", "head -n 5 a.txt", "wc -l a.txt", "du -sh .", "diff a.txt b.txt", "file a.txt", "stat a.txt",
    "/usr/bin/ls -l", "/bin/cat a.txt",
])
def test_everyday_reading_runs_without_asking(tool: Tool, command: str) -> None:
    assert tool.approval_reason({"command": command}) is None


@pytest.mark.parametrize(("command", "reason"), [
    ("find /workspace -type f -delete", "find with -delete"),
    ("find . -name x -exec sh -c 'rm -rf /workspace' ;", "find with -exec"),
    ("find . -execdir rm {} +", "find with -execdir"),
    ("find . -ok rm {} ;", "find with -ok"),
    ("find . -fprintf /workspace/out %p", "find with -fprintf"),
    ("find . -fls listing", "find with -fls"),
    ("rg --pre ./decode.sh secret", "rg with --pre"),
    ("rg --pre=./decode.sh secret", "rg with --pre"),
    ("rg --pre-glob '*.pdf' --pre pdftotext x", "rg with --pre-glob"),
    ("sort -o notes.txt /dev/null", "sort with -o"),
    ("sort -uo notes.txt /dev/null", "sort with -o"),
    ("sort --output=notes.txt /dev/null", "sort with --output"),
    ("sort --outp=notes.txt /dev/null", "sort with --outp"),
    ("sort --compress-program=sh a", "sort with --compress-program"),
    ("uniq /dev/null notes.txt", "uniq with 2 operands"),
    ("uniq - notes.txt", "uniq with 2 operands"),
    ("date -s 2020-01-01", "date with -s"),
    ("date 0101000020", "date with the operand '0101000020'"),
    ("file -C -m magic", "file with -C"),
    ("python3 -c 'import shutil; shutil.rmtree(\"/workspace\")'", "python3 is not on the allow-list"),
    ("sh -c 'rm -rf /workspace'", "sh is not on the allow-list"),
    ("rm -rf /workspace", "rm is not on the allow-list"),
    ("./ls", "./ls is a file in the workspace"),
    ("/workspace/ls -la", "/workspace/ls is a file in the workspace"),
    ("//workspace/bin/cat x", "//workspace/bin/cat is a file in the workspace"),
    ("bin/ls", "bin/ls is a file in the workspace"),
])
def test_the_attacks_ask_first(tool: Tool, command: str, reason: str) -> None:
    got = tool.approval_reason({"command": command})
    assert got is not None and got.startswith(reason), got


def test_a_workspace_file_named_like_an_allowed_program_asks(tmp_path: Path) -> None:
    fake = tmp_path / "ls"
    fake.write_text("#!/bin/sh\nrm -rf \"$HOME\"\n", encoding="utf-8")
    fake.chmod(0o755)
    tool = exec_tool(Workspace([tmp_path]), CommandPolicy())
    assert tool.approval_reason({"command": [str(fake)]}) == f"{fake} is a file in the workspace, not a program of the system"


def test_a_path_must_lead_to_the_same_binary(tmp_path: Path) -> None:
    other = shutil.which("id")
    assert other is not None
    link = tmp_path / "bin" / "ls"
    link.parent.mkdir()
    link.symlink_to(other)
    tool = exec_tool(Workspace([tmp_path / "workspace"]), CommandPolicy())
    reason = tool.approval_reason({"command": [str(link)]})
    assert reason is not None and reason.startswith(f"{link} is not /")


def test_the_allowed_command_runs_by_its_absolute_path() -> None:
    verdict = ALLOW.check(["ls", "-la"])
    assert verdict.reason is None and verdict.argv == [shutil.which("ls", path="/usr/local/bin:/usr/bin:/bin"), "-la"]
    refused = ALLOW.check(["./ls", "-la"])
    assert refused.reason is not None and refused.argv == ["./ls", "-la"]


def test_interpreters_are_not_on_the_default_list() -> None:
    for word in ("python3", "sh", "bash", "perl", "node", "env", "xargs"):
        assert ALLOW.check([word, "-c", "x"]).reason == f"{word} is not on the allow-list"


def test_a_program_off_the_list_asks_by_its_path_too() -> None:
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    assert python is not None
    verdict = ALLOW.check([python, "-c", "import shutil; shutil.rmtree('/workspace')"])
    assert verdict.reason == "python3 is not on the allow-list"
    assert verdict.argv == [python, "-c", "import shutil; shutil.rmtree('/workspace')"]


def test_entries_that_are_no_system_program_are_skipped_and_said(tmp_path: Path) -> None:
    planted = tmp_path / "tool"
    planted.write_text("#!/bin/sh\n", encoding="utf-8")
    planted.chmod(0o755)
    allow = AllowList(["ls", "no-such-program-here", "./ls", str(planted)], workspace=[tmp_path])
    assert list(allow.programs) == ["ls"]
    assert [s.split(":")[0] for s in allow.skipped] == ["no-such-program-here", "./ls", str(planted)]
    assert allow.check([str(planted)]).reason is not None


def test_an_entry_of_several_words_requires_them(tmp_path: Path) -> None:
    allow = AllowList(["ls -l"], workspace=[tmp_path])
    assert allow.check(["ls", "-l", "x"]).reason is None
    assert allow.check(["ls", "x"]).reason == "only ls -l runs without asking"
    assert allow.check(["ls", "-l", "-R"]).reason is None


def test_shell_mode_always_asks(tmp_path: Path) -> None:
    tool = exec_tool(Workspace([tmp_path]), CommandPolicy(shell=True))
    assert tool.approval_reason({"command": "ls"}) == "shell commands always need approval"


# -- properties: no argument list can carry a refused option past the checker ------------------

words = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
plain = st.lists(words, max_size=6)
REFUSED = {
    "find": st.sampled_from(["-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"]),
    "rg": st.sampled_from(["--pre", "--pre=x", "--pre-glob", "--pre-glob=*", "--hostname-bin=x"]),
    "sort": st.builds(lambda a, b: f"-{a}o{b}", st.sampled_from(["", "u", "nr", "s"]), words)
    | st.sampled_from(["-o", "-T", "--output", "--output=x", "--out=x", "--o", "--compress-program=sh"]),
    "date": st.sampled_from(["-s", "--set=x", "--set", "-us"]),
}


@given(program=st.sampled_from(sorted(REFUSED)), before=plain, after=plain, data=st.data())
def test_a_refused_option_anywhere_asks(program: str, before: list[str], after: list[str], data: st.DataObject) -> None:
    refused = data.draw(REFUSED[program])
    assert ALLOW.check([program, *before, refused, *after]).reason is not None


@given(name=st.sampled_from(DEFAULT_ALLOW), folder=st.sampled_from(["/workspace", str(WORKSPACE), ".", "sub"]),
       args=plain)
def test_a_file_in_the_workspace_never_runs_without_asking(name: str, folder: str, args: list[str]) -> None:
    assert ALLOW.check([f"{folder}/{name}", *args]).reason is not None


@given(argv=st.lists(words, min_size=1, max_size=8))
def test_the_checker_answers_any_argv(argv: list[str]) -> None:
    verdict = ALLOW.check(argv)
    if verdict.reason is None:
        assert Path(verdict.argv[0]).is_absolute() and verdict.argv[1:] == argv[1:]
        assert Path(argv[0]).name in DEFAULT_ALLOW
    else:
        assert verdict.argv == argv


@given(uniq_args=st.lists(words.filter(lambda w: not w.startswith("-")), min_size=2, max_size=5), flags=plain)
def test_uniq_with_an_output_operand_asks(uniq_args: list[str], flags: list[str]) -> None:
    assert ALLOW.check(["uniq", *flags, *uniq_args]).reason is not None


@pytest.mark.parametrize(("argv", "reason"), [
    (["sort", "--output=notes.txt", "/dev/null"], "sort with --output"),
    (["sort", "--o=notes.txt", "/dev/null"], "sort with --o"),
    (["rg", "--pre=./decode.sh=x", "secret"], "rg with --pre"),
    (["rg", "--pre-glob=*=x", "secret"], "rg with --pre-glob"),
    (["uniq", "--", "-in", "-out"], "uniq with 2 operands (more than 1: the last may be written)"),
    (["date", "-d", "x", "0101000020"], "date with the operand 'x' (only +... runs without asking)"),
])
def test_a_refusal_names_the_option_or_operand_exactly(argv: list[str], reason: str) -> None:
    """The reason a person reads names the option as given (without its value), or the operands."""
    assert ALLOW.check(argv).reason == f"{reason}: it may write, delete or run a program"


@pytest.mark.parametrize("argv", [
    ["sort", "notes.txt"], ["sort", "--", "todo.txt"], ["date", "+%s"], ["uniq", "--", "in.txt"], ["rg", "--", "-e"],
    ["file", "--", "notes.txt"], ["sort", "-"],
])
def test_operands_and_a_bare_double_dash_are_not_taken_for_refused_options(argv: list[str]) -> None:
    assert ALLOW.check(argv).reason is None


# -- the list itself: what is skipped and why, what is warned about, what the model is told ----


def test_an_empty_command_asks_with_its_reason() -> None:
    for argv in ([], [""]):
        verdict = ALLOW.check(argv)
        assert (verdict.reason, verdict.argv) == ("the command is empty", argv)


def test_a_refused_command_runs_as_given_once_approved(tmp_path: Path) -> None:
    """A person who approves a refused command approves the argv they saw: it runs unchanged."""
    other = shutil.which("id")
    assert other is not None
    not_ls = tmp_path / "bin" / "ls"
    not_ls.parent.mkdir()
    not_ls.symlink_to(other)
    prefixed = AllowList(["ls -l"], workspace=[WORKSPACE])
    for allow, argv in ((ALLOW, [str(not_ls), "-l"]), (ALLOW, ["find", ".", "-delete"]), (prefixed, ["ls", "-R"]),
                        (ALLOW, ["rm", "x"]), (ALLOW, ["./ls"])):
        verdict = allow.check(argv)
        assert verdict.reason is not None and verdict.argv == argv


def test_every_skipped_entry_is_named_with_the_reason(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    planted = workspace / "tool"
    planted.write_text("#!/bin/sh\n", encoding="utf-8")
    planted.chmod(0o755)
    into_workspace = tmp_path / "link-to-workspace"
    into_workspace.symlink_to(planted)
    not_executable = tmp_path / "notes.txt"
    not_executable.write_text("hello\n", encoding="utf-8")
    allow = AllowList(["", "'unclosed", "./ls", "bin/ls", "no-such-program-here", str(not_executable), str(tmp_path),
                       str(planted), str(into_workspace), "/usr/bin/ls"], workspace=[workspace])
    assert allow.skipped == [
        "'': not a command",
        "\"'unclosed\": not a command",
        "./ls: a relative path; name a program, or give its absolute path",
        "bin/ls: a relative path; name a program, or give its absolute path",
        "no-such-program-here: no such program on /usr/local/bin:/usr/bin:/bin",
        f"{not_executable}: no such program on /usr/local/bin:/usr/bin:/bin",
        f"{tmp_path}: no such program on /usr/local/bin:/usr/bin:/bin",
        f"{planted}: {planted} is in the workspace, not a program of the system",
        f"{into_workspace}: {into_workspace} is in the workspace, not a program of the system",
    ]
    assert allow.check(["/usr/bin/ls", "-l"]) == ALLOW.check(["/usr/bin/ls", "-l"])
    assert allow.check(["ls"]).reason is None and allow.check(["ls"]).argv == ["/usr/bin/ls"]


def test_a_program_found_only_outside_the_sandbox_path_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Saber's own PATH may hold folders the sandbox does not: a name is looked up as the sandbox will."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mine = bin_dir / "my-reader"
    mine.write_text("#!/bin/sh\n", encoding="utf-8")
    mine.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    allow = AllowList(["my-reader", "ls"], workspace=[tmp_path / "workspace"])
    assert allow.skipped == ["my-reader: no such program on /usr/local/bin:/usr/bin:/bin"]
    assert allow.check(["my-reader"]).reason == "my-reader is not on the allow-list"
    own = AllowList(["my-reader"], workspace=[tmp_path / "workspace"], search_path=str(bin_dir))
    assert own.skipped == [] and own.check(["my-reader"]).argv == [str(mine)]


def test_listing_a_program_that_runs_programs_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shell = shutil.which("sh")
    assert shell is not None
    renamed = tmp_path / "bin" / "lister"  # a harmless name for a shell
    renamed.parent.mkdir()
    renamed.symlink_to(shell)
    with caplog.at_level("WARNING", logger="saber.tools.system.allowlist"):
        allow = AllowList(["ls", "python3", str(renamed)], workspace=[tmp_path / "workspace"])
    assert list(allow.programs) == ["ls", "python3", "lister"]
    assert [r.getMessage() for r in caplog.records] == [
        "exec.allow lists python3, which runs programs: each of its commands runs without asking",
        f"exec.allow lists {renamed}, which runs programs: each of its commands runs without asking",
    ]


def test_the_model_is_told_what_runs_without_asking(tmp_path: Path) -> None:
    tool = exec_tool(Workspace([tmp_path]), CommandPolicy(allow=("ls", "git status", "grep")))
    assert "Runs without asking: ls, git status, grep (not with options" in tool.description
    nothing = exec_tool(Workspace([tmp_path]), CommandPolicy(allow=()))
    assert "Runs without asking: nothing (not with options" in nothing.description


def test_a_long_option_of_one_letter_is_named_as_given() -> None:
    assert ALLOW.check(["sort", "--o", "x"]).reason == "sort with --o: it may write, delete or run a program"


def test_a_path_outside_the_workspace_that_only_starts_like_it_is_not_taken_for_it() -> None:
    allow = AllowList(DEFAULT_ALLOW, workspace=[Path("/srv/w")])
    ls = allow.programs["ls"].path
    assert allow.check(["/Xsrv/w/ls"]).reason == f"/Xsrv/w/ls is not {ls}, the ls on the allow-list"
    assert allow.check(["/srv/w/ls"]).reason == "/srv/w/ls is a file in the workspace, not a program of the system"


# -- exec_command as the model and the approval broker see it ------------------------------------


def test_the_model_is_told_whether_a_sandbox_holds_the_command(tmp_path: Path) -> None:
    boxed = exec_tool(Workspace([tmp_path]), CommandPolicy(allow=("ls",)))
    assert boxed.description == (
        "Run a command inside a sandbox (read-only system, the workspace at /workspace, no network) and return "
        "its exit code, stdout and stderr. Runs without asking: ls (not with options that write, delete or run "
        "programs, e.g. find -delete/-exec, sort -o); anything else waits for a person's approval.")
    bare = exec_tool(Workspace([tmp_path]), CommandPolicy(sandbox=False, allow=("ls",)))
    assert bare.description.startswith("Run a command WITHOUT a sandbox and return its exit code")


def test_the_model_is_sent_the_command_s_schema(tmp_path: Path) -> None:
    tool = exec_tool(Workspace([tmp_path]), CommandPolicy())
    assert tool.to_openai()["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "command": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
                        "description": "The command line, e.g. \"ls -la\" or \"grep -n TODO notes.txt\", or its words as a list."},
            "cwd": {"type": "string", "description": "Folder in the workspace to run in (default: the workspace)."},
        },
        "required": ["command"],
    }


def test_a_plan_s_malformed_command_still_asks_with_a_reason(tool: Tool) -> None:
    """The broker asks before the arguments are validated: whatever the plan holds gets an answer."""
    assert tool.approval_reason({"command": "echo 'unclosed"}) == "the command cannot be checked against the allow-list"
    assert tool.approval_reason({"command": 42}) == "42 is not on the allow-list"
    assert tool.approval_reason({}) == "None is not on the allow-list"


def test_allow_list_entries_skipped_are_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="saber.tools.system.commands"):
        exec_tool(Workspace([tmp_path]), CommandPolicy(allow=("ls", "no-such-program-here")))
    assert [r.getMessage() for r in caplog.records if r.name == "saber.tools.system.commands"] == [
        "exec.allow: no-such-program-here: no such program on /usr/local/bin:/usr/bin:/bin (it asks for approval)"]


async def test_output_cut_as_the_command_ended_names_the_configured_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command may end in the same instant its output passes the budget: it was not stopped,
    and the note still says its output was cut, with the budget configured."""
    from saber.tools.system import commands
    from saber.tools.system.sandbox import Limits, Outcome

    async def ended_as_cut(*_args: object, **_kwargs: object) -> Outcome:
        return Outcome(exit_code=0, stdout="x" * 4096, stderr="", output_cut=True)

    monkeypatch.setattr(commands, "run_confined", ended_as_cut)
    tool = exec_tool(Workspace([tmp_path]), CommandPolicy(limits=Limits(output_bytes=4096)))
    assert await tool.run({"command": "ls"}) == {
        "exit_code": 0, "stdout": "x" * 4096, "stderr": "", "note": "output over 4,096 bytes was cut"}


def test_a_command_is_never_retried_by_the_runtime_and_carries_its_own_time_limit(tmp_path: Path) -> None:
    """A command stopped half-way may have acted: the graph runtime must not run it again, and its
    step timeout must leave the command's own limit to fire first (and be reported)."""
    from saber.tools.system.sandbox import Limits

    tool = exec_tool(Workspace([tmp_path]), CommandPolicy(limits=Limits(wall_seconds=12.5)))
    assert tool.idempotent is False
    assert tool.timeout == 12.5
