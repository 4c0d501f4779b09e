"""Every ``python`` block of docs/client-guide.md runs as pasted: each is a whole program, run
here the way a user runs it, ``python example.py`` in a process of its own with
``NAMESRV_ADDR`` naming a name server (a ``ThreadedCluster`` of this process, on a real port).

Each program must exit 0 and print what the ``text`` block that follows it says, where
``...`` stands for anything (doctest's ELLIPSIS). Every program runs twice against the same
broker, as a user runs an example again against ``make run``'s broker, which keeps what the
first run sent. The programs of one round run at once (each is mostly the third of a second
that Python and the imports take to start; they use topics and groups of their own)."""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from orbitmq.testing import ThreadedCluster
from tests.support import REPO_ROOT

GUIDE = REPO_ROOT / "docs" / "client-guide.md"
FENCE = re.compile(r"^```(\w*)\s*$")
ROUNDS = 2
#: A program waits on the broker for 10 s at most (the push consumer's wait_for); a hung one
#: is killed well within the per-test timeout, which covers both rounds.
PROGRAM_TIMEOUT_S = 30


@dataclass
class Example:
    heading: str
    line: int
    program: str
    output: str | None = None

    @property
    def where(self) -> str:
        return f"{GUIDE.name}:{self.line} ({self.heading})"


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def parse_examples(markdown: str) -> list[Example]:
    """The ``python`` blocks, each with the ``text`` block that follows it before the next
    heading or block, if there is one."""
    examples: list[Example] = []
    awaiting_output: Example | None = None
    heading = ""
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = FENCE.match(line)
        if fence is None:
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
                awaiting_output = None
            index += 1
            continue
        end = lines.index("```", index + 1)
        body = "".join(text + "\n" for text in lines[index + 1 : end])
        if fence[1] == "python":
            awaiting_output = Example(heading, index + 1, body)
            examples.append(awaiting_output)
        elif fence[1] == "text" and awaiting_output is not None:
            awaiting_output.output = body
            awaiting_output = None
        else:
            awaiting_output = None
        index = end + 1
    return examples


EXAMPLES = parse_examples(GUIDE.read_text())


def run_round(scripts: list[Path], env: dict[str, str]) -> list[Run]:
    processes = [
        subprocess.Popen(
            [sys.executable, str(script)],
            cwd=script.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script in scripts
    ]
    runs = []
    for process in processes:
        try:
            stdout, stderr = process.communicate(timeout=PROGRAM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            stderr += f"\n(killed after {PROGRAM_TIMEOUT_S} s)"
        runs.append(Run(process.returncode, stdout, stderr))
    return runs


@pytest.fixture(scope="module")
def guide_runs(tmp_path_factory: pytest.TempPathFactory) -> list[list[Run]]:
    """Each example's runs, one per round."""
    root = tmp_path_factory.mktemp("client-guide")
    scripts = []
    for number, example in enumerate(EXAMPLES):
        script = root / f"example_{number}.py"
        script.write_text(example.program)
        scripts.append(script)
    # The SQL92 filters section needs a broker that filters by properties.
    settings = {"enable_property_filter": True}
    with ThreadedCluster(root / "cluster", broker_settings=settings) as cluster:
        env = {**os.environ, "NAMESRV_ADDR": cluster.namesrv_addr}
        rounds = [run_round(scripts, env) for _ in range(ROUNDS)]
    return [list(runs) for runs in zip(*rounds, strict=True)]


def test_the_guide_has_examples_with_outputs() -> None:
    assert len(EXAMPLES) >= 10
    missing = [example.where for example in EXAMPLES if example.output is None]
    assert not missing, f"python blocks without a text block of what they print: {missing}"


def test_the_parser_pairs_a_program_with_the_output_right_after_it() -> None:
    markdown = (
        "# A\n```python\nprint(1)\n```\nIt prints:\n```text\n1\n```\n"
        "## B\n```python\nprint(2)\n```\n## C\n```text\n2\n```\n"
        "```python\nprint(3)\n```\n```sh\nmake run\n```\n```text\n3\n```\n"
    )
    assert [(e.heading, e.line, e.program, e.output) for e in parse_examples(markdown)] == [
        ("A", 2, "print(1)\n", "1\n"),
        ("B", 10, "print(2)\n", None),
        ("C", 17, "print(3)\n", None),
    ]


#: The first argument of the calls that name a topic or a group.
NAMED = re.compile(
    r"\b(?:Message|subscribe|create_topic|\w*Producer|\w*Consumer|queue_offsets)"
    r"\(\s*(?:NAMESRV,\s*)?\"([^\"]+)\""
)


def test_each_example_has_topics_and_groups_of_its_own() -> None:
    # The programs of a round run at once against one broker: two that share a topic or a
    # group change each other's queues, offsets or subscriptions (one example's create_topic
    # once shrank another's auto-created topic under its running consumer).
    users: dict[str, list[str]] = {}
    for example in EXAMPLES:
        for name in sorted(set(NAMED.findall(example.program))):
            users.setdefault(name, []).append(example.where)
    shared = {name: wheres for name, wheres in users.items() if len(wheres) > 1}
    assert not shared, f"names used by more than one example: {shared}"
    assert len(users) >= 2 * len(EXAMPLES) - 5


@pytest.mark.parametrize(
    "number",
    range(len(EXAMPLES)),
    ids=[re.sub(r"\W+", "-", example.heading).strip("-").lower() for example in EXAMPLES],
)
@pytest.mark.slow
def test_example_runs_as_pasted(number: int, guide_runs: list[list[Run]]) -> None:
    example = EXAMPLES[number]
    assert example.output is not None, f"{example.where}: no text block of what it prints"
    checker = doctest.OutputChecker()
    for round_number, run in enumerate(guide_runs[number], 1):
        context = f"{example.where}, run {round_number}"
        assert run.returncode == 0, f"{context}: exit {run.returncode}\n{run.stderr}"
        want = example.output
        if not checker.check_output(want, run.stdout, doctest.ELLIPSIS):
            pytest.fail(
                f"{context}: printed something else\n"
                + checker.output_difference(doctest.Example("", want), run.stdout, doctest.ELLIPSIS)
                + run.stderr
            )
