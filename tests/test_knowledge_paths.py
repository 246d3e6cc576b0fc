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


def test_a_verl_package_is_its_own_tree_only_where_no_project_holds_it(tmp_path):
    """A checkout of verl (or a fork: ./verl next to setup.py) is one tree, whose requirements say what its run
    installs, for the files inside the package too; an installed package (site-packages) is a tree of its own."""
    checkout = tmp_path / "checkout"
    shell = checkout / "verl" / "experimental" / "shell"
    shell.mkdir(parents=True)
    (checkout / "verl" / "trainer").mkdir()
    (checkout / "setup.py").write_text("from setuptools import setup\nsetup(name='verl')\n")
    assert tree_root(str(shell / "run.sh")) == str(checkout)
    site = tmp_path / "site-packages"
    installed = site / "verl"
    (installed / "trainer").mkdir(parents=True)
    (installed / "workers").mkdir()
    assert tree_root(str(installed / "workers" / "a.py")) == str(installed)


def test_a_tree_without_its_own_git_sits_in_the_nearest_checkout_above_it(tmp_path):
    repo = tmp_path / "repo"
    tree = repo / "examples" / "recipe"
    tree.mkdir(parents=True)
    (repo / ".git").mkdir()
    assert enclosing_checkout(str(tree)) == str(repo)
    (tree / ".git").mkdir()
    assert enclosing_checkout(str(tree)) is None  # its own checkout


def test_a_directory_inside_a_verl_package_belongs_to_the_nearest_verl_folder_holding_trainer(tmp_path):
    from rlcompat.knowledge.verl_config import package_root

    package = tmp_path / "verl"
    (package / "trainer" / "config").mkdir(parents=True)
    (tmp_path / "x" / "verl" / "utils").mkdir(parents=True)  # a `verl` folder without trainer/ is not the package
    assert package_root(str(package / "trainer" / "config")) == str(package)
    assert package_root(str(package)) == str(package)
    assert package_root(str(tmp_path / "x" / "verl" / "utils")) is None


def test_a_model_path_is_looked_for_from_the_scanned_file_s_folder_and_four_above_it_only(tmp_path):
    from rlcompat.analysis.model_config import find_config

    deep = tmp_path / "a" / "b" / "c" / "d" / "e"
    (deep / "f").mkdir(parents=True)
    for base in (tmp_path / "a", tmp_path):
        (base / "models" / "m").mkdir(parents=True)
        (base / "models" / "m" / "config.json").write_text("{}")
    reads: list[str] = []
    found = find_config("models/m", str(deep / "run.sh"), reads)
    assert found == str(tmp_path / "a" / "models" / "m" / "config.json") and reads == ["models/m"]
    assert find_config("models/m", str(deep / "f" / "run.sh")) is None  # a is five above f, tmp_path six
