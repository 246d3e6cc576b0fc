"""The language server (pygls 2): diagnostics for every open document on open, change and save; each offered fix
as a quick fix; "fix all" as a `source.fixAll` action. Documents are synchronised whole (TextDocumentSyncKind.Full),
so the buffer checked is exactly the client's, line breaks and all.
"""

from __future__ import annotations

import asyncio
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from rlcompat import __version__
from rlcompat.analysis import param_defaults
from rlcompat.findings import Edit, Finding
from rlcompat.knowledge import identity
from rlcompat.knowledge.declared_pins import declares_environment
from rlcompat.server.analysis import Analysis, EditorSettings, analyse, language_for
from rlcompat.server.positions import UTF16, PositionMap

SOURCE = "rlcompat"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.rlcompat"
# A change is checked once no newer change came for this long: typing in a big file, where a check takes a second,
# then checks the last text, not every keystroke's in turn (the changes queued meanwhile are read first).
SETTLE_S = 0.1


class RlcompatServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("rlcompat", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.editor = EditorSettings()
        self.analyses: dict[str, tuple[int | None, Analysis]] = {}  # uri -> (document version, its analysis)
        self.told: set[str] = set()  # problems already shown, so a bad config is not shown at every keystroke
        self.waiting: dict[str, asyncio.TimerHandle] = {}  # uri -> its check after the last change

    def check_later(self, uri: str) -> None:
        self.forget(uri)
        self.waiting[uri] = asyncio.get_running_loop().call_later(SETTLE_S, self._settled, uri)

    def forget(self, uri: str) -> None:
        handle = self.waiting.pop(uri, None)
        if handle is not None:
            handle.cancel()

    def _settled(self, uri: str) -> None:
        self.waiting.pop(uri, None)
        if unquote(uri) in self.workspace.text_documents:  # not closed meanwhile
            self.check(uri)

    def analysis(self, uri: str) -> Analysis:
        """The analysis of the document's current text (reused while its version is unchanged)."""
        doc = self.workspace.get_text_document(uri)
        kept = self.analyses.get(uri)
        if kept and kept[0] == doc.version and kept[1].text == doc.source:
            return kept[1]
        path = to_fs_path(uri) or doc.path
        found = analyse(path, doc.source, language_for(path, doc.language_id), self.editor)
        self.analyses[uri] = (doc.version, found)
        return found

    def check(self, uri: str, again: bool = False) -> None:
        self.forget(uri)
        if again:
            self.analyses.pop(uri, None)
        found = self.analysis(uri)
        if found.problem and found.problem not in self.told:
            self.told.add(found.problem)
            self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"rlcompat: {found.problem}"))
        doc = self.workspace.get_text_document(uri)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=doc.version, diagnostics=diagnostics(found, self.positions(found))))

    def positions(self, found: Analysis) -> PositionMap:
        encoding = self.workspace.position_encoding
        return PositionMap(found.text, getattr(encoding, "value", encoding) or UTF16)


def diagnostics(found: Analysis, where: PositionMap) -> list[types.Diagnostic]:
    out = [_diagnostic(f, found, where) for f in found.findings]
    if found.parse_error:
        line = max(0, found.parse_error_line - 1)  # the whole line: front ends count columns differently
        out.append(types.Diagnostic(
            range=_range(where, where.offset(line, 0), where.offset(line, len(found.text))),
            message=f"rlcompat cannot check this file until it parses: {found.parse_error}",
            severity=types.DiagnosticSeverity.Warning, source=SOURCE))
    return out


def _diagnostic(f: Finding, found: Analysis, where: PositionMap) -> types.Diagnostic:
    start, end = found.span(f)
    message = f.message
    if f.fix:
        message += f" (fix{'' if f.fix.safety.value == 'safe' else ', unsafe'}: {f.fix.description})"
    return types.Diagnostic(
        range=_range(where, start, end), message=message, code=f.code, source=SOURCE,
        severity=types.DiagnosticSeverity.Error if f.severity == "error" else types.DiagnosticSeverity.Warning)


def _range(where: PositionMap, start: int, end: int) -> types.Range:
    return types.Range(types.Position(*where.position(start)), types.Position(*where.position(end)))


def _workspace_edit(uri: str, edits: list[Edit], where: PositionMap) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(changes={uri: [types.TextEdit(_range(where, e.start, e.end), e.content) for e in edits]})


def _wanted(only, kind: str) -> bool:
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)


def code_actions(server: RlcompatServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    found = server.analysis(uri)
    where = server.positions(found)
    only = params.context.only
    lo = where.offset(params.range.start.line, params.range.start.character)
    hi = where.offset(params.range.end.line, params.range.end.character)
    actions = []
    offered = [f for f in found.findings if found.offered(f)]
    if _wanted(only, types.CodeActionKind.QuickFix.value):
        for f in offered:
            start, end = found.span(f)
            if start <= hi and lo <= end:
                unsafe = "" if f.fix.safety.value == "safe" else " (unsafe)"
                actions.append(types.CodeAction(
                    title=f"{f.code}: {f.fix.description}{unsafe}", kind=types.CodeActionKind.QuickFix,
                    diagnostics=[_diagnostic(f, found, where)], is_preferred=not unsafe,
                    edit=_workspace_edit(uri, found.edits(f), where)))
    if offered and _wanted(only, FIX_ALL):
        edit = found.fix_all()
        if edit is not None:
            what = "safe and unsafe" if found.unsafe_fixes else "safe"
            actions.append(types.CodeAction(title=f"rlcompat: fix all {what} fixes", kind=FIX_ALL,
                                            edit=_workspace_edit(uri, [edit], where)))
    return actions


def build() -> RlcompatServer:
    server = RlcompatServer()

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.editor = EditorSettings.from_client(params.initialization_options)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        changed = EditorSettings.from_client(params.settings)
        if changed != EditorSettings():  # a client that sends null asks the server to pull: keep what we had
            server.editor = changed
        for uri in list(server.analyses):
            server.check(uri, again=True)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        server.check(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        server.check_later(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        saved = params.text_document.uri
        # What a tree runs (its framework versions, entry points) is read from its files once and kept; any saved
        # file may be one of them (a pin, an install script, a version file), so the next check reads them again.
        identity.clear_caches()
        param_defaults.clear_caches()  # the calls of a script's functions in its tree (any saved file may hold one)
        # A saved pyproject.toml ([tool.rlcompat], pins) or other declaration of the environment may change every
        # open document's findings; any other save, its own.
        everyone = saved.endswith("/pyproject.toml") or declares_environment(to_fs_path(saved) or saved)
        for uri in list(server.analyses) if everyone else [saved]:
            server.check(uri, again=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        server.forget(params.text_document.uri)
        server.analyses.pop(params.text_document.uri, None)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions(server, params)

    return server
