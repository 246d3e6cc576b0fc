"""The walk up from a scanned path: the nearest project root (`identity.tree_root`) and the checkout a tree without
its own `.git` sits in (`install_steps.enclosing_checkout`), both through `knowledge.paths`."""

from __future__ import annotations

import os

from rlcompat.knowledge.identity import TREE_MARKERS, tree_root
from rlcompat.knowledge.install_steps import enclosing_checkout
from rlcompat.knowledge.paths import nearest, upwards


def test_upwards_walks_every_directory_to_the_root_and_nearest_stops_at_the_first_that_holds(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    walked = list(upwards(str(deep)))
    assert walked[:4] == [str(deep), str(deep.parent), str(deep.parent.parent), str(tmp_path)]
    assert walked[-1] == os.path.dirname(walked[-1])  # the filesystem's root, once
    assert nearest(str(deep), lambda d: os.path.basename(d) in ("a", "b")) == str(deep.parent)
    assert nearest(str(deep), lambda d: False) is None


def test_a_file_belongs_to_the_nearest_directory_with_a_project_marker_else_its_own(tmp_path):
    project = tmp_path / "proj"
    package = project / "pkg" / "sub"
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (package / "train.py").write_text("x = 1\n")
    assert tree_root(str(package / "train.py")) == str(project)
    assert tree_root(str(project)) == str(project)
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "run.py").write_text("x = 1\n")
    above = nearest(str(tmp_path), lambda d: any(os.path.exists(os.path.join(d, m)) for m in TREE_MARKERS))
    assert tree_root(str(loose / "run.py")) == (above or str(loose))  # pytest's folder: no marker above, as a rule


def test_a_tree_without_its_own_git_sits_in_the_nearest_checkout_above_it(tmp_path):
    repo = tmp_path / "repo"
    tree = repo / "examples" / "recipe"
    tree.mkdir(parents=True)
    (repo / ".git").mkdir()
    assert enclosing_checkout(str(tree)) == str(repo)
    (tree / ".git").mkdir()
    assert enclosing_checkout(str(tree)) is None  # its own checkout
