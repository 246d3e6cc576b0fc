"""`rlcompat server` end to end: pygls's LanguageClient starts `python -m rlcompat server` as a subprocess and talks
LSP to it over stdio, as an editor does.

The test computes positions and applies edits with its own UTF-16 arithmetic (`_offset`), not the server's, so a
wrong column in the server shows up as a wrong range or a wrong fixed text here.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

HAZARD = ("import torch\n"
          "from transformers import AutoModelForCausalLM\n"
          "label = '😀 naïve'; model = AutoModelForCausalLM.from_pretrained('m', torch_dtype=torch.bfloat16)\n")
ATTENTION = "model = AutoModelForCausalLM.from_pretrained('m', attn_implementation='flash_attention_2')\n"
TIMEOUT = 60


def _offset(text: str, position: types.Position) -> int:
    """The character offset of an LSP position, counting UTF-16 code units on the line."""
    lines = text.splitlines(keepends=True)  # the test texts hold no line break other than \n
    start = sum(len(line) for line in lines[:position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    count = 0
    for i, c in enumerate(line):
        if count == position.character:
            return start + i
        count += len(c.encode("utf-16-le")) // 2
    assert count == position.character, "a position inside a character or past the line"
    return start + len(line)


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def _covered(text: str, rng: types.Range) -> str:
    return text[_offset(text, rng.start):_offset(text, rng.end)]


class Editor:
    """A client with the documents it opened and the diagnostics the server last published for each."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = LanguageClient("rlcompat-tests", "1")
        self.published: asyncio.Queue = asyncio.Queue()
        self.messages: list[str] = []
        self.versions: dict[str, int] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def show(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

    async def start(self, options: dict | None = None, capabilities=None) -> types.InitializeResult:
        await self.client.start_io(sys.executable, "-m", "rlcompat", "server", cwd=str(self.root))
        result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=capabilities or types.ClientCapabilities(), root_uri=self.root.as_uri(),
            initialization_options=options)), TIMEOUT)
        self.client.initialized(types.InitializedParams())
        return result

    async def stop(self) -> None:
        await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
        self.client.exit(None)
        await asyncio.wait_for(self.client.stop(), TIMEOUT)

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        while True:
            params = await asyncio.wait_for(self.published.get(), TIMEOUT)
            if params.uri == uri:
                return list(params.diagnostics)

    async def open(self, name: str, text: str, language_id: str = "python") -> list[types.Diagnostic]:
        uri = self.uri(name)
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)))
        return await self.diagnostics(uri)

    async def change(self, name: str, text: str) -> list[types.Diagnostic]:
        uri = self.uri(name)
        self.versions[uri] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))
        return await self.diagnostics(uri)

    async def actions(self, name: str, rng: types.Range, only=None) -> list[types.CodeAction]:
        uri = self.uri(name)
        params = types.CodeActionParams(types.TextDocumentIdentifier(uri), rng, types.CodeActionContext([], only=only))
        return await asyncio.wait_for(self.client.text_document_code_action_async(params), TIMEOUT) or []


def _session(root: Path, body, options: dict | None = None, capabilities=None):
    async def run():
        editor = Editor(root)
        editor.initialized = await editor.start(options, capabilities)
        try:
            return await body(editor)
        finally:
            await editor.stop()

    return asyncio.run(run())


def _edits(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    return action.edit.changes[uri]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\ntarget = "sm61"\n')
    return tmp_path


def test_diagnostics_quick_fixes_and_updates_for_a_bf16_hazard(project):
    async def body(editor: Editor):
        found = await editor.open("train.py", HAZARD)
        # The CLI on the same text (saved under another name) reports the same code, line and columns.
        (project / "same.py").write_text(HAZARD, encoding="utf-8")
        cli = subprocess.run([sys.executable, "-m", "rlcompat", "scan", "same.py", "--output-format", "json"],
                             cwd=project, capture_output=True, text=True, timeout=120)
        cli_findings = json.loads(cli.stdout)["findings"]
        assert found and [d.code for d in found] == [f["code"] for f in cli_findings]
        lines = HAZARD.splitlines(keepends=True)
        for d, f in zip(found, cli_findings):
            assert d.severity == (types.DiagnosticSeverity.Error if f["severity"] == "error" else types.DiagnosticSeverity.Warning)
            assert d.message.startswith(f["message"])
            cli_start = sum(len(line) for line in lines[:f["line"] - 1]) + f["column"] - 1
            cli_end = sum(len(line) for line in lines[:f["end_line"] - 1]) + f["end_column"] - 1
            assert (_offset(HAZARD, d.range.start), _offset(HAZARD, d.range.end)) == (cli_start, cli_end)
        bf16 = next(d for d in found if "bfloat16" in _covered(HAZARD, d.range))
        assert _covered(HAZARD, bf16.range) == "torch.bfloat16"
        assert bf16.range.start.line == 2
        # UTF-16: the emoji is two code units, so the column is one more than the character count.
        assert bf16.range.start.character == HAZARD.splitlines()[2].index("torch.bfloat16") + 1
        assert bf16.source == "rlcompat" and bf16.severity == types.DiagnosticSeverity.Error

        actions = await editor.actions("train.py", bf16.range)
        quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
        assert quick and all(bf16.code in a.title for a in quick)
        fixed = _apply(HAZARD, _edits(quick[0], editor.uri("train.py")))
        assert "torch.float32" in fixed and "bfloat16" not in fixed
        assert "label = '😀 naïve'; model" in fixed

        after = await editor.change("train.py", fixed)
        assert bf16.code not in [d.code for d in after]
        again = await editor.change("train.py", fixed + ATTENTION)
        attention = [d for d in again if "flash_attention_2" in _covered(fixed + ATTENTION, d.range)]
        assert attention and attention[0].range.start.line == 3
        return True

    assert _session(project, body)


def test_a_client_that_counts_utf8_bytes_gets_byte_columns(project):
    utf8_only = types.ClientCapabilities(general=types.GeneralClientCapabilities(position_encodings=["utf-8"]))

    async def body(editor: Editor):
        assert editor.initialized.capabilities.position_encoding == "utf-8"
        return await editor.open("train.py", HAZARD)

    found = _session(project, body, capabilities=utf8_only)
    bf16 = next(d for d in found if d.code == "RLC101")
    line = HAZARD.splitlines()[2]
    prefix = line[:line.index("torch.bfloat16")]
    assert (bf16.range.start.line, bf16.range.start.character) == (2, len(prefix.encode("utf-8")))
    assert bf16.range.end.character - bf16.range.start.character == len("torch.bfloat16")


def test_fix_all_gives_what_rlcompat_fix_writes(project):
    text = HAZARD + ATTENTION

    async def body(editor: Editor):
        await editor.open("train.py", text)
        everything = types.Range(types.Position(0, 0), types.Position(5, 0))
        actions = await editor.actions("train.py", everything, only=[types.CodeActionKind.SourceFixAll])
        assert [a.kind for a in actions] == ["source.fixAll.rlcompat"]
        return _apply(text, _edits(actions[0], editor.uri("train.py")))

    fixed = _session(project, body)
    (project / "train.py").write_text(text, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "rlcompat", "fix", "train.py"], cwd=project, capture_output=True, timeout=120)
    assert fixed == (project / "train.py").read_text(encoding="utf-8") != text


def test_unsafe_fixes_are_offered_only_when_configured(project):
    # On a T4 the precision policy trains in fp16: turning bf16=True into fp16=True may change numerics (unsafe).
    text = "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', bf16=True)\n"
    everything = types.Range(types.Position(0, 0), types.Position(2, 0))

    async def titles(editor: Editor):
        found = await editor.open("train.py", text)
        assert [d.code for d in found] == ["RLC103"] and "(fix, unsafe: use fp16=True)" in found[0].message
        return [(a.kind, a.title) for a in await editor.actions("train.py", everything)]

    assert _session(project, titles, {"target": "sm75"}) == []
    assert _session(project, titles, {"target": "sm75", "unsafeFixes": True}) == [
        ("quickfix", "RLC103: use fp16=True (unsafe)"), ("source.fixAll.rlcompat", "rlcompat: fix all safe and unsafe fixes")]


def test_a_syntax_error_yaml_and_the_editor_target(project):
    async def body(editor: Editor):
        broken = await editor.open("broken.py", HAZARD + "def f(:\n")
        assert len(broken) == 1 and "cannot check this file until it parses" in broken[0].message
        assert broken[0].range.start.line == 3
        healed = await editor.change("broken.py", HAZARD)
        assert healed and all(d.code for d in healed)
        yaml = await editor.open("config.yaml", "actor:\n  dtype: bfloat16\nmodel:\n  attn_implementation: flash_attention_2\n",
                                 "yaml")
        return broken, yaml

    _, yaml = _session(project, body)
    assert yaml, "the YAML hazards are reported"
    # sm80 (A100) runs bf16 and FlashAttention-2: the editor's target wins over [tool.rlcompat]'s sm61.
    on_a100 = _session(project, lambda e: e.open("train.py", HAZARD), {"target": "sm80"})
    assert on_a100 == []


def test_after_a_burst_of_changes_the_diagnostics_are_those_of_the_last_text(project):
    texts = [HAZARD + "#" * n + "\n" for n in range(1, 6)] + [HAZARD.replace("bfloat16", "float32")]

    async def body(editor: Editor):
        await editor.open("train.py", HAZARD)
        uri = editor.uri("train.py")
        for version, text in enumerate(texts, start=2):
            editor.client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(text=text)]))
        while True:
            params = await asyncio.wait_for(editor.published.get(), TIMEOUT)
            if params.version == len(texts) + 1:
                return list(params.diagnostics)

    assert "RLC101" not in [d.code for d in _session(project, body)]


def test_saving_pyproject_rechecks_open_documents_and_closing_clears_them(project):
    async def body(editor: Editor):
        before = await editor.open("train.py", HAZARD)
        (project / "pyproject.toml").write_text('[tool.rlcompat]\ntarget = "sm80"\n')
        editor.client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(editor.uri("pyproject.toml"))))
        after = await editor.diagnostics(editor.uri("train.py"))
        editor.client.text_document_did_close(types.DidCloseTextDocumentParams(
            types.TextDocumentIdentifier(editor.uri("train.py"))))
        return before, after, await editor.diagnostics(editor.uri("train.py"))

    before, after, closed = _session(project, body)
    assert before and after == [] and closed == []


def test_saving_a_pin_rechecks_open_documents_with_the_new_identity(project):
    # The server is a long-lived process: the identity of the tree (which verl it runs) must be read again when
    # a file that declares it is saved, not kept from the first check.
    (project / "requirements.txt").write_text("verl==0.9.1\n")
    script = "python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.fsdp_config.dtype=float32\n"

    async def body(editor: Editor):
        before = await editor.open("run.sh", script, language_id="shellscript")
        (project / "requirements.txt").write_text("verl==0.4.0\n")
        editor.client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(editor.uri("requirements.txt"))))
        return before, await editor.diagnostics(editor.uri("run.sh"))

    before, after = _session(project, body)
    # verl 0.9.1 defaults the rollout to bf16 (RLC104 at the command); for 0.4.0 rlcompat has no defaults to judge.
    assert "RLC104" in [d.code for d in before]
    assert "RLC104" not in [d.code for d in after]


def test_an_unknown_target_is_shown_once_and_nothing_is_published(project):
    async def body(editor: Editor):
        first = await editor.open("a.py", HAZARD)
        second = await editor.change("a.py", HAZARD + "\n")
        return first, second, editor.messages

    first, second, messages = _session(project, body, {"target": "sm999"})
    assert first == second == []
    assert len(messages) == 1 and "unknown target 'sm999'" in messages[0]


def test_server_without_pygls_says_how_to_install_it(tmp_path):
    # A stand-in `pygls` that fails to import, ahead of the real one on sys.path.
    (tmp_path / "pygls").mkdir()
    (tmp_path / "pygls" / "__init__.py").write_text("raise ImportError('no pygls here', name='pygls')\n")
    proc = subprocess.run([sys.executable, "-m", "rlcompat", "server"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["rlcompat: error: the language server needs pygls: pip install 'pygls>=2.0,<3' (rlcompat's lsp extra)"]
