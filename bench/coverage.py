"""Coverage: rlcompat's recall and precision on labeled corpora from real public projects.

    nice -n 10 .venv/bin/python bench/coverage.py                    # every corpus, sm61 and sm75, print the tables
    nice -n 10 .venv/bin/python bench/coverage.py --write docs/coverage.md
    nice -n 10 .venv/bin/python bench/coverage.py --corpus trl-0.24.0 --targets sm61
    .venv/bin/python bench/coverage.py --candidates trl-0.24.0   # candidate lines not yet judged in its label file
    (a run's report names every corpus with candidate lines not judged; it exits 1 where a dev corpus has any)

Misses and false positives are listed for dev corpora only; holdout corpora get counts per kind (rule writers must
not tune on them). --holdout-details lists them too, for whoever adjudicates the holdout labels.

Each corpus is one label file, bench/coverage/labels/<corpus>.toml: where to download it from (a PyPI sdist or
wheel, pinned by sha256; or, for files no PyPI release ships, a commit of a local git mirror: GIT_MIRRORS), which files inside the unpacked archive form the corpus (`include` globs), its split
("dev": rule writers may read it; "holdout": only measured), and every candidate line judged by hand from the GPU
and framework facts (rlcompat/knowledge/data/targets.toml, docs/troubleshooting.md, shared/gpu-facts.md), independently of what
rlcompat reports: `[[hazard]]` (kind, targets it breaks on, the fact) or `[[clean]]` (why not).

Archives are fetched through PyPI's JSON API (the project's release list gives the file's URL and sha256) and
unpacked into bench/.corpus/coverage/<corpus>/ (gitignored); nothing of them is committed. `pip download
--no-binary :all:` would build each sdist's metadata first (minutes, and it fails where build dependencies are
missing), so the archive itself is fetched and its sha256 checked instead.

The scan is the real CLI: `rlcompat scan --output-format json --no-cache --exit-zero --target T FILES...`, run in
the corpus root over exactly the included files. A finding hits a hazard when it is on the same file and its line
range [line, end_line] covers the hazard's line (or overlaps the hazard's optional `end_line` span: a JSON block
from its key to its value, a shell command continued over lines). Per corpus and target:

- recall = labeled hazards (for that target) hit by at least one finding / labeled hazards;
- precision = findings that hit a hazard / (those + findings on lines judged clean, or on hazard lines whose
  hazard is not for this target). Findings on lines nobody judged are "unadjudicated": listed, not counted.
  Notice rules (NOTICE_CODES: dead keys, unused suppressions) are listed, never counted: neither hits nor false
  positives. A notice on a labeled hazard is marked: it calls a live setting dead.

Kinds come from each finding's rule code through KIND_BY_CODE (longest matching prefix; unknown codes: "other").
A hit does not require the kinds to agree (a bf16 hazard found by a generic rule still counts); disagreements are
listed so they can be looked at.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "bench" / "coverage" / "labels"
CORPUS_DIR = REPO / "bench" / ".corpus" / "coverage"
RLCOMPAT = REPO / ".venv" / "bin" / "rlcompat"
PYPI_JSON = "https://pypi.org/pypi/{name}/json"
START, END = "<!-- coverage:start -->", "<!-- coverage:end -->"

# Rule code (longest prefix wins) -> hazard kind. The one place that ties rlcompat's codes to the label vocabulary.
KIND_BY_CODE = {
    "RLC1": "bf16",  # RLC1xx: bf16 / precision selections
    "RLC20": "fa2",  # RLC20x: FlashAttention selected
    "RLC203": "flash-attn-import",
    "RLC211": "fa2",  # a recipe dataclass's attention default left by the command
    "RLC122": "bf16",  # a recipe dataclass's precision default left by the command
    "RLC30": "compile",  # RLC30x: Triton / torch.compile below what the card supports
    "RLC305": "liger",
    "RLC35": "compile",  # RLC35x: compile / fused-kernel switches
    "RLC354": "liger",
    "RLC401": "rollout-engine",
    "RLC402": "rollout-engine",
    "RLC404": "rollout-engine",  # a framework's generation-engine setting (Unsloth's fast_inference, enforce_eager)
    "RLC407": "rollout-engine",
    "RLC417": "rollout-engine",
    "RLC403": "fp8",
    "RLC413": "rollout-engine",  # a vLLM engine built in Python
    "RLC416": "quantization",
    "RLC5": "other",  # RLC5xx: installed-environment checks (doctor); not expected from scan
}

# Rules whose findings say a line is stale or unread rather than hazardous (a dead key, an unused suppression, a
# shell command rlcompat could not read). They are listed as notices, never counted as hits (a "this key does
# nothing" notice on a live hazard is wrong advice, not a detection) nor as false positives.
NOTICE_CODES = {"RLC001", "RLC002", "RLC106", "RLC352"}

KINDS = (
    "bf16", "fa2", "flash-attn-import", "compile", "liger", "rollout-engine", "fp8", "tf32", "quantization",
    "env-wheel", "nccl-p2p", "other",
)
TARGETS = ("sm61", "sm75")
SPLITS = ("dev", "holdout")
SOURCE_RE = re.compile(r"^pypi-(sdist|wheel):([A-Za-z0-9._-]+)==([A-Za-z0-9._+-]+)$"
                       r"|^git:([A-Za-z0-9._-]+/[A-Za-z0-9._-]+)@([0-9a-f]{40})$")
# Corpora no PyPI file ships (torchtitan's train_configs/*.toml are in no sdist or wheel): a commit of a local git
# mirror of the public repository (`git:owner/name@<commit>`), read with `git archive`. The commit pins the content;
# `sha256` is CONTENT_DIGEST of the included files, so a mirror that lies is caught too. Without the mirror the
# corpus is skipped with a note (nothing else needs it).
GIT_MIRRORS = Path(os.environ.get("RLCOMPAT_GIT_MIRRORS", "/work/.mirror"))

# How candidates are found (recorded in each label file's header too): a line is a candidate when it matches.
CANDIDATE_RE = re.compile(
    r"bf16|bfloat16|\bhalf\b|fp16|float16|dtype|precision|flash|attn_impl|compile|inductor|vllm|sglang|liger"
    r"|fp8|tf32|\bawq\b|gptq|bnb|bitsandbytes|8bit|4bit|cu1[0-9]{2}|(?-i:^\s*FROM\s)|"
    r"TORCH_CUDA_ARCH_LIST|NCCL|deepspeed|--num_gpus\b|nproc|packing|ring_attn|triton|\bamp\b|autocast|quantiz|\bLLM\("
    # torch as a requirement: with any specifier (spaces allowed), a bare quoted "torch" (pyproject, setup.py), a
    # requirements or YAML list line that is only torch (a lower-bound-free torch installs the newest release), and
    # an install command that names it
    r"|(?<![\w./-])torch\s*(?:\[[^\]]*\]\s*)?(?:[<>!~]=?|===?)|(?:^\s*|[\[(,]\s*)[\"']torch\s*(?:\[[^\]]*\])?\s*(?:;[^\"']*)?[\"']"
    r"|^\s*(?:-\s+)?torch\s*(?:\[[^\]]*\])?\s*(?:[;#].*)?$|\binstall\b[^\n#]*(?<![\w./-])torch(?![\w.-])",
    re.IGNORECASE,
)


def kind_of(code: str) -> str:
    best = ""
    for prefix in KIND_BY_CODE:
        if code.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return KIND_BY_CODE[best] if best else "other"


@dataclass
class Corpus:
    name: str
    source: str
    sha256: str
    include: list[str]
    exclude: list[str]
    split: str
    frameworks: list[str]
    hazards: list[dict]
    clean: list[dict]
    path: Path
    checkout: bool = False  # a git corpus unpacked as a whole clone (only `include` is scanned)

    @property
    def root(self) -> Path:
        return CORPUS_DIR / self.name


def load_corpus(path: Path) -> Corpus:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    head = data["corpus"]
    return Corpus(
        name=head["name"], source=head["source"], sha256=head["sha256"], include=list(head["include"]),
        exclude=list(head.get("exclude", [])), split=head["split"], frameworks=list(head.get("frameworks", [])),
        checkout=bool(head.get("checkout", False)),
        hazards=list(data.get("hazard", [])), clean=list(data.get("clean", [])), path=path,
    )


def all_corpora() -> list[Corpus]:
    return [load_corpus(p) for p in sorted(LABELS.glob("*.toml"))]


def _download(corpus: Corpus) -> bytes:
    try:
        return _fetch(corpus)
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise SystemExit(f"{corpus.path}: cannot download {corpus.source}: {error}; check the network or PyPI access")


def _fetch(corpus: Corpus) -> bytes:
    kind, name, version = SOURCE_RE.match(corpus.source).group(1, 2, 3)
    index_url = PYPI_JSON.format(name=name)
    with urllib.request.urlopen(index_url, timeout=60) as reply:
        releases = json.load(reply)["releases"]
    wanted = "sdist" if kind == "sdist" else "bdist_wheel"
    files = [f for f in releases.get(version, []) if f["packagetype"] == wanted]
    if not files:
        raise SystemExit(f"{corpus.path}: PyPI has no {wanted} of {name}=={version}; fix `source`")
    # Some mirrors give relative URLs; resolve them against the index page.
    url = urllib.parse.urljoin(index_url, files[0]["url"])
    with urllib.request.urlopen(url, timeout=300) as reply:
        blob = reply.read()
    digest = hashlib.sha256(blob).hexdigest()
    if digest != corpus.sha256:
        raise SystemExit(f"{corpus.path}: {url} has sha256 {digest}, the label file pins {corpus.sha256}")
    return blob


class CorpusUnavailable(Exception):
    """A corpus whose source is not on this machine (a git mirror): skipped with a note."""


def content_digest(root: Path, files: list[str]) -> str:
    """sha256 over the included files (path, NUL, length, bytes, in path order): what a git corpus pins."""
    digest = hashlib.sha256()
    for rel in files:
        blob = (root / rel).read_bytes()
        digest.update(rel.encode() + b"\0" + str(len(blob)).encode() + b"\0" + blob)
    return digest.hexdigest()


def _ensure_git_corpus(corpus: Corpus) -> Path:
    repo, commit = SOURCE_RE.match(corpus.source).group(4, 5)
    git_dir = GIT_MIRRORS / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise CorpusUnavailable(f"{corpus.name}: no git mirror of {repo} at {git_dir} (set RLCOMPAT_GIT_MIRRORS); skipped")
    git = ["git", "--git-dir", str(git_dir)]
    listed = subprocess.run(git + ["ls-tree", "-r", "--name-only", "-z", commit], capture_output=True)
    if listed.returncode != 0:
        raise CorpusUnavailable(f"{corpus.name}: {git_dir} lacks commit {commit}: {listed.stderr.decode().strip()}")
    # Only the included files are read (a mirror may lack the repository's large data files), unless the corpus is
    # a checkout (`checkout = true`): then every file of the commit the mirror holds is written, as a user's clone
    # has them (the fork's worker code, its version file), with an empty `.git` folder marking the clone's root; the
    # scan still covers the included files only.
    listed_names = [n for n in listed.stdout.decode().split("\0") if n]
    included = [n for n in listed_names if any(_glob_match(n, g) for g in corpus.include)
                and not any(_glob_match(n, g) for g in corpus.exclude)]
    names = listed_names if corpus.checkout else included
    staging = corpus.root.with_name(corpus.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in names:
        shown = subprocess.run(git + ["show", f"{commit}:{name}"], capture_output=True)
        if shown.returncode != 0:
            if name in included:
                raise CorpusUnavailable(f"{corpus.name}: {git_dir} lacks {name} at {commit}")
            continue  # context only (a submodule entry, a blob the mirror does not hold)
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_bytes(shown.stdout)
    if corpus.checkout:
        (staging / ".git").mkdir(exist_ok=True)
    staging.rename(corpus.root)
    digest = content_digest(corpus.root, included_files(corpus))
    if digest != corpus.sha256:
        shutil.rmtree(corpus.root)
        raise SystemExit(f"{corpus.path}: the included files of {corpus.source} have content digest {digest}, "
                         f"the label file pins {corpus.sha256}")
    (corpus.root / ".sha256").write_text(_stamp(corpus) + "\n")
    return corpus.root


def _stamp(corpus: Corpus) -> str:
    """What `.sha256` records of an unpacked corpus: its digest, whether it is a whole checkout, and for a git corpus
    the include and exclude lists its digest covers (a list edited after the unpack is checked again: the digest of
    the new list's files against the label file's)."""
    stamp = corpus.sha256 + (" checkout" if corpus.checkout else "")
    if corpus.source.startswith("git:"):
        listed = json.dumps([list(corpus.include), list(corpus.exclude)])
        stamp += " files " + hashlib.sha256(listed.encode()).hexdigest()[:16]
    return stamp


def ensure_corpus(corpus: Corpus) -> Path:
    """Unpack the corpus archive into CORPUS_DIR/<name> once; return the archive's root folder."""
    stamp = corpus.root / ".sha256"
    if stamp.is_file() and stamp.read_text().strip() == _stamp(corpus):
        return corpus.root
    shutil.rmtree(corpus.root, ignore_errors=True)
    if corpus.source.startswith("git:"):
        return _ensure_git_corpus(corpus)
    blob = _download(corpus)
    staging = corpus.root.with_name(corpus.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if corpus.source.startswith("pypi-sdist:"):
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            tar.extractall(staging, filter="data")
        tops = list(staging.iterdir())
        if len(tops) != 1 or not tops[0].is_dir():
            raise SystemExit(f"{corpus.path}: {corpus.source} does not unpack to one NAME-VERSION/ folder")
        tops[0].rename(corpus.root)
        staging.rmdir()
    else:
        with zipfile.ZipFile(io.BytesIO(blob)) as wheel:
            wheel.extractall(staging)
        staging.rename(corpus.root)
    stamp.write_text(corpus.sha256 + "\n")
    return corpus.root


def _glob_match(rel: str, pattern: str) -> bool:
    # "**" crosses folders, "*" does not.
    regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
    regex = regex.replace(r"\?", "[^/]")
    return re.fullmatch(regex, rel) is not None


def included_files(corpus: Corpus) -> list[str]:
    root = corpus.root
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if any(_glob_match(rel, g) for g in corpus.include) and not any(_glob_match(rel, g) for g in corpus.exclude):
            out.append(rel)
    return out


def unjudged(corpus: Corpus) -> list[tuple[str, int, str]]:
    """The corpus' candidate lines its label file neither calls a hazard (any line of a hazard's span) nor clean."""
    judged = {(e["file"], e["line"]) for e in corpus.clean}
    for h in corpus.hazards:
        judged.update((h["file"], n) for n in range(h["line"], h.get("end_line", h["line"]) + 1))
    return [c for c in candidates(corpus) if (c[0], c[1]) not in judged]


def candidates(corpus: Corpus) -> list[tuple[str, int, str]]:
    out = []
    for rel in included_files(corpus):
        text = (corpus.root / rel).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if CANDIDATE_RE.search(line):
                out.append((rel, number, line.strip()))
    return out


@dataclass
class Finding:
    code: str
    path: str
    line: int
    end_line: int
    message: str

    @property
    def kind(self) -> str:
        return kind_of(self.code)


def scan(corpus: Corpus, target: str, files: list[str], identity: list[str] | None = None) -> tuple[list[Finding], list[dict]]:
    command = [str(RLCOMPAT), "scan", "--output-format", "json", "--no-cache", "--exit-zero", "--target", target]
    done = subprocess.run(command + files, cwd=corpus.root, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"rlcompat scan failed on {corpus.name} ({target}), exit {done.returncode}:\n{done.stderr}")
    report = json.loads(done.stdout)
    if identity is not None:  # each scanned tree's identity line, as `scan` prints it
        for tree in report.get("identity", []):
            texts = [f["text"] for f in tree.get("frameworks", [])]
            root = os.path.relpath(tree["root"], corpus.root) if tree.get("root") else "."
            identity.append(f"{root}: " + ("; ".join(texts) or "no framework package or pin in the tree"))
    findings = [
        Finding(f["code"], f["path"], f["line"], f.get("end_line") or f["line"], f["message"])
        for f in report["findings"]
    ]
    return findings, report.get("errors", [])


@dataclass
class Result:
    corpus: Corpus
    target: str
    hazards: list[dict]
    hit: list[dict] = field(default_factory=list)
    missed: list[dict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    true_positives: list[Finding] = field(default_factory=list)
    false_positives: list[tuple[Finding, str]] = field(default_factory=list)
    unadjudicated: list[Finding] = field(default_factory=list)
    notices: list[Finding] = field(default_factory=list)
    kind_mismatch: list[tuple[Finding, dict]] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def recall(self) -> float | None:
        return len(self.hit) / len(self.hazards) if self.hazards else None

    @property
    def precision(self) -> float | None:
        judged = len(self.true_positives) + len(self.false_positives)
        return len(self.true_positives) / judged if judged else None


def _covers(finding: Finding, entry: dict) -> bool:
    """The finding's line range [line, end_line] overlaps the entry's [line, end_line] (end_line optional)."""
    if finding.path != entry["file"]:
        return False
    first, last = entry["line"], entry.get("end_line", entry["line"])
    return finding.line <= last and first <= max(finding.end_line, finding.line)


def evaluate(corpus: Corpus, target: str, findings: list[Finding]) -> Result:
    live = [h for h in corpus.hazards if target in h["targets"]]
    other_target = [h for h in corpus.hazards if target not in h["targets"]]
    result = Result(corpus, target, live, findings=findings)
    claims = [f for f in findings if f.code not in NOTICE_CODES]
    result.notices = [f for f in findings if f.code in NOTICE_CODES]
    for hazard in live:
        (result.hit if any(_covers(f, hazard) for f in claims) else result.missed).append(hazard)
    for finding in claims:
        matched = [h for h in live if _covers(finding, h)]
        if matched:
            result.true_positives.append(finding)
            if all(h["kind"] != finding.kind for h in matched):
                result.kind_mismatch.append((finding, matched[0]))
            continue
        clean = [c for c in corpus.clean if _covers(finding, c)]
        elsewhere = [h for h in other_target if _covers(finding, h)]
        if clean:
            why = clean[0]["why"] + (f" (`{_short(clean[0]['text'], 70)}`)" if clean[0].get("text") else "")
            result.false_positives.append((finding, why))
        elif elsewhere:
            result.false_positives.append(
                (finding, f"hazard only on {', '.join(elsewhere[0]['targets'])} (`{_short(elsewhere[0]['text'], 70)}`)")
            )
        else:
            result.unadjudicated.append(finding)
    return result


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _by_kind(entries) -> str:
    counts: dict[str, int] = defaultdict(int)
    for kind in entries:
        counts[kind] += 1
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def render(results: list[Result], seconds: float, holdout_details: bool = False,
           unjudged: dict[str, int] | None = None) -> str:
    lines = []
    lines.append("| corpus | split | target | files | hazards | found | recall | findings | true pos. | false pos. "
                 "| unadjudicated | notices | precision |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        lines.append(
            f"| {r.corpus.name} | {r.corpus.split} | {r.target} | {len(included_files(r.corpus))} | "
            f"{len(r.hazards)} | {len(r.hit)} | {_ratio(r.recall)} | {len(r.findings)} | "
            f"{len(r.true_positives)} | {len(r.false_positives)} | {len(r.unadjudicated)} | {len(r.notices)} | "
            f"{_ratio(r.precision)} |"
        )
    total_h = sum(len(r.hazards) for r in results)
    total_hit = sum(len(r.hit) for r in results)
    total_tp = sum(len(r.true_positives) for r in results)
    total_fp = sum(len(r.false_positives) for r in results)
    lines.append(
        f"| **all** | | | | {total_h} | {total_hit} | {_ratio(total_hit / total_h if total_h else None)} | "
        f"{sum(len(r.findings) for r in results)} | {total_tp} | {total_fp} | "
        f"{sum(len(r.unadjudicated) for r in results)} | {sum(len(r.notices) for r in results)} | "
        f"{_ratio(total_tp / (total_tp + total_fp) if total_tp + total_fp else None)} |"
    )
    for split in SPLITS:
        part = [r for r in results if r.corpus.split == split]
        h = sum(len(r.hazards) for r in part)
        hit = sum(len(r.hit) for r in part)
        tp = sum(len(r.true_positives) for r in part)
        fp = sum(len(r.false_positives) for r in part)
        lines.append(f"| **{split}** | | | | {h} | {hit} | {_ratio(hit / h if h else None)} | | {tp} | {fp} | | | "
                     f"{_ratio(tp / (tp + fp) if tp + fp else None)} |")
    lines.append("")
    lines.append("Recall per hazard kind (all corpora):")
    lines.append("")
    lines.append("| kind | target | hazards | found | recall |")
    lines.append("|---|---|---:|---:|---:|")
    per_kind: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        for h in r.hazards:
            per_kind[(h["kind"], r.target)][0] += 1
        for h in r.hit:
            per_kind[(h["kind"], r.target)][1] += 1
    for (kind, target), (n, hit) in sorted(per_kind.items(), key=lambda kv: (KINDS.index(kv[0][0]), kv[0][1])):
        lines.append(f"| {kind} | {target} | {n} | {hit} | {_ratio(hit / n)} |")
    lines.append("")
    lines.append(f"Scan time, all corpora and targets: {seconds:.1f} s.")
    lines.append("")
    lines.append("Candidate lines not judged in the label files: " + (
        ", ".join(f"{name} {n}" for name, n in sorted(unjudged.items())) if unjudged
        else "none (every candidate line of every corpus above is judged)") + ".")
    for r in results:
        if not (r.missed or r.false_positives or r.unadjudicated or r.errors or r.kind_mismatch or r.notices):
            continue
        lines.append("")
        lines.append(f"### {r.corpus.name} on {r.target}")
        if r.corpus.split == "holdout" and not holdout_details:
            lines.append("")
            lines.append(
                f"Holdout: details withheld (`--holdout-details` shows them). Missed {len(r.missed)}"
                f"{' (' + _by_kind(h['kind'] for h in r.missed) + ')' if r.missed else ''}; "
                f"false positives {len(r.false_positives)}"
                f"{' (' + _by_kind(f.kind for f, _ in r.false_positives) + ')' if r.false_positives else ''}; "
                f"unadjudicated {len(r.unadjudicated)}; notices {len(r.notices)}."
            )
            continue
        lines += _section("Missed hazards",
                          [f"- `{h['file']}:{h['line']}` {h['kind']}: `{_short(h['text'])}`" for h in r.missed])
        lines += _section("False positives", [f"- `{f.path}:{f.line}` {f.code} ({f.kind}): judged clean: {why}"
                                              for f, why in r.false_positives])
        lines += _section("Unadjudicated findings", [f"- `{f.path}:{f.line}` {f.code} ({f.kind}): {_short(f.message)}"
                                                     for f in r.unadjudicated])
        lines += _section("Notices, not counted", [f"- `{f.path}:{f.line}` {f.code}{_notice_mark(f, r)}: "
                                                   f"{_short(f.message)}" for f in r.notices])
        lines += _section("Hits whose rule kind differs from the label",
                          [f"- `{f.path}:{f.line}` {f.code} ({f.kind}) on a {h['kind']} hazard"
                           for f, h in r.kind_mismatch])
        lines += _section("Files rlcompat reported as unreadable",
                          [f"- `{e.get('path')}`: {_short(e.get('message', ''))}" for e in r.errors])
    return "\n".join(lines) + "\n"


def _section(title: str, items: list[str]) -> list[str]:
    """One per-corpus list: a blank line, "title (count):", the items; nothing when there are none."""
    return ["", f"{title} ({len(items)}):", *items] if items else []


def _notice_mark(notice: Finding, result: Result) -> str:
    on_hazard = any(_covers(notice, h) for h in result.hazards)
    return " **(on a labeled hazard: the setting is live)**" if on_hazard else ""


def _short(text: str, width: int = 110) -> str:
    text = " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")
    return text if len(text) <= width else text[: width - 3] + "..."


def write_doc(doc: Path, body: str) -> None:
    text = doc.read_text(encoding="utf-8") if doc.exists() else f"# Coverage\n\n{START}\n{END}\n"
    if START not in text or END not in text:
        raise SystemExit(f"{doc}: no {START} ... {END} block to replace; add one where the tables belong")
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    doc.write_text(f"{before}{START}\n{body}{END}{after}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", help="only these corpora (repeatable)")
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated, of sm61,sm75")
    parser.add_argument("--write", type=Path, help="replace the generated block of this Markdown file")
    parser.add_argument("--candidates", metavar="CORPUS", help="print candidate lines not judged in the labels")
    parser.add_argument("--download-only", action="store_true", help="fetch and unpack the corpora, then stop")
    parser.add_argument("--identity", action="store_true",
                        help="also print the identity line of each scanned tree of each corpus (issue 26)")
    parser.add_argument("--holdout-details", action="store_true",
                        help="also list the misses and false positives of holdout corpora (not for rule writers)")
    args = parser.parse_args(argv)

    corpora = all_corpora()
    if args.candidates:
        corpora = [c for c in corpora if c.name == args.candidates]
        if not corpora:
            raise SystemExit(f"no label file names corpus {args.candidates!r} in {LABELS}")
        corpus = corpora[0]
        ensure_corpus(corpus)
        for rel, number, text in unjudged(corpus):
            print(f"{rel}:{number}: {text[:160]}")
        print(f"# {len(included_files(corpus))} files, {len(candidates(corpus))} candidate lines, "
              f"{len(corpus.hazards)} hazards, {len(corpus.clean)} clean", file=sys.stderr)
        return 0
    if args.corpus:
        unknown = set(args.corpus) - {c.name for c in corpora}
        if unknown:
            raise SystemExit(f"unknown corpus: {', '.join(sorted(unknown))}")
        corpora = [c for c in corpora if c.name in args.corpus]
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if not set(targets) <= set(TARGETS):
        raise SystemExit(f"--targets: only {', '.join(TARGETS)} are labeled")
    available = []
    for corpus in corpora:
        try:
            ensure_corpus(corpus)
            available.append(corpus)
        except CorpusUnavailable as why:
            print(f"note: {why}", file=sys.stderr)
    corpora = available
    if args.download_only:
        return 0
    if not RLCOMPAT.exists():
        raise SystemExit(f"{RLCOMPAT} is missing: run `bash scripts/setup.sh` first")

    results = []
    identities: dict[str, list[str]] = {}
    started = time.perf_counter()
    for corpus in corpora:
        files = included_files(corpus)
        for target in targets:
            t0 = time.perf_counter()
            wanted = identities.setdefault(corpus.name, []) if args.identity and target == targets[0] else None
            findings, errors = scan(corpus, target, files, wanted)
            result = evaluate(corpus, target, findings)
            result.errors = errors
            result.seconds = time.perf_counter() - t0
            results.append(result)
    left = {c.name: len(unjudged(c)) for c in corpora}
    left = {name: n for name, n in left.items() if n}
    body = render(results, time.perf_counter() - started, holdout_details=args.holdout_details, unjudged=left)
    print(body)
    for name, lines in identities.items():
        print(f"identity {name}: " + " | ".join(lines))
    if args.write:
        write_doc(args.write, body)
    if left:
        print(f"candidate lines not judged: {', '.join(f'{n} ({k})' for n, k in sorted(left.items()))}; "
              "`--candidates NAME` lists them", file=sys.stderr)
    # a dev figure over lines nobody judged is not a measurement, and rule writers may judge dev lines: the exit
    # status says so; a holdout's lines wait for its adjudicator (rule writers must not read them)
    return 1 if any(c.split == "dev" and c.name in left for c in corpora) else 0


if __name__ == "__main__":
    sys.exit(main())
