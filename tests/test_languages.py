"""The language records (rlcompat/lang/languages.py): each is complete, and the modules that ask about languages agree
with them. A new language that lacks a part (a front end without `check`, an embedded language with no record, a
file pattern shared with another language, a rule naming a language no record declares) fails here."""

from __future__ import annotations

import importlib
import inspect

import pytest

from rlcompat.lang.languages import declared_language
from rlcompat.pipeline.discovery import language_of
from rlcompat.lang.languages import BY_NAME, LANGUAGES, by_file_name, spelling_of
from rlcompat.rules import file_rules

FRONT_END_API = ("parse", "check", "PARSE_ERRORS", "syntax_error_location")


@pytest.mark.parametrize("lang", LANGUAGES, ids=lambda lang: lang.name)
def test_record_is_complete(lang):
    front_end = importlib.import_module(lang.front_end)
    missing = [name for name in FRONT_END_API if not hasattr(front_end, name)]
    assert not missing, f"{lang.front_end} lacks {missing}"
    assert "scanned" in inspect.signature(front_end.check).parameters, f"{lang.front_end}.check takes no scanned file"
    assert lang.extensions or lang.names or lang.sniff or lang.refined_from, f"{lang.name}: no way to know a file is of it"
    if lang.refined_from:
        assert BY_NAME[lang.refined_from].refine is not None, f"{lang.name}: {lang.refined_from} refines to nothing"
    assert all(e.startswith(".") and e == e.lower() for e in lang.extensions), lang.extensions
    assert all(n == n.lower() for n in lang.names), lang.names
    assert set(lang.embeds) <= set(BY_NAME) - {lang.name}, f"{lang.name} embeds {lang.embeds}"
    assert lang.fence and lang.noun, lang.name
    if lang.skip_names or lang.max_bytes:
        assert lang.skip_reason or lang.max_bytes and not lang.skip_names, f"{lang.name}: skips without saying why"


def test_names_are_unique():
    assert len(BY_NAME) == len(LANGUAGES)
    extensions = [e for lang in LANGUAGES for e in lang.extensions]
    assert len(extensions) == len(set(extensions)), "an extension belongs to two languages"
    editor_ids = [lang.editor_id for lang in LANGUAGES if lang.editor_id]
    assert len(editor_ids) == len(set(editor_ids))
    origins = [o for lang in LANGUAGES for o in lang.origins]
    assert len(origins) == len(set(origins)), "a setting origin is spelled by two languages"


def test_every_rule_language_has_a_record():
    unknown = {(r.code, lang) for r in file_rules() for lang in r.languages if lang not in BY_NAME}
    assert not unknown


@pytest.mark.parametrize("path, expected", [
    ("run.sh", "shell"), ("a/b/train.yaml", "yaml"), ("x.yml", "yaml"), ("environment.yml", "conda"),
    ("conda-cuda.yaml", "conda"), ("pyproject.toml", "pyproject"), ("ds.toml", "toml"), ("requirements-dev.txt", "requirements"),
    ("requirements/base.txt", "requirements"), ("notes.txt", None), ("Dockerfile", "dockerfile"),
    ("docker/Dockerfile.cuda", "dockerfile"), ("Dockerfile.j2", None), ("ds_config.json", "json"), ("a.ipynb", "notebook"),
    ("train.py", "python"), ("README.md", None),
])
def test_language_of_walked_files(path, expected):
    assert language_of(path) == expected


def test_explicit_only_languages_count_when_named():
    assert by_file_name("README.md") is None
    assert by_file_name("README.md", explicit=True).name == "markdown"


def test_declared_language_is_environment_files_only():
    assert declared_language("requirements.txt") == "requirements"
    assert declared_language("Dockerfile") == "dockerfile"
    assert declared_language("run.sh") is None
    assert declared_language("train.yaml") is None


def test_value_spelling_follows_the_origin():
    assert spelling_of("python-keyword").null == "None" and spelling_of("python-keyword").true == "True"
    assert spelling_of("yaml").null == "null"
    assert spelling_of("json").false == "false"
