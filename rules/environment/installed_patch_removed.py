from __future__ import annotations

from rlcompat.contract import Bad, EnvironmentRule, Good

PATCH = ('[[installed_patch]]\ndist = "verl"\npatched_version = "0.9.1"\ninstalled_version = "{installed}"\n'
         'target = "sm61"\nstate = "{state}"\n{files}\n')


def _example(state: str, installed: str = "0.9.1", files: str = 'patched = ["verl/utils/model.py"]') -> str:
    return PATCH.format(state=state, installed=installed, files=files) + '[packages]\nverl = "' + installed + '"\n'


def _some(files: tuple[str, ...]) -> str:
    return ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")


class InstalledPatchRemoved(EnvironmentRule):
    code = "RLC516"
    name = "installed-patch-removed"
    title = "A framework rlcompat patched in site-packages lost its patch (reinstalled, upgraded or edited)"
    what = (
        "Reads the manifests `rlcompat fix --installed` keeps (one per distribution and site-packages folder on this "
        "Python's path, in `$XDG_STATE_HOME/rlcompat/installed/`) and reports a patch whose files hold their "
        "original bytes again, a distribution whose installed version is no longer the patched one (or that is no "
        "longer installed), and patched "
        "files edited since."
    )
    why = (
        "pip writes a distribution's files anew on a reinstall or an upgrade and records them in RECORD [S99]; "
        "rlcompat's changes go with them, and the hazards they fixed come back: for verl, the critic's value-head "
        "model loaded with flash_attention_2 whatever the config says (verl 0.9.1 `utils/model.py:649,674`) [S50]. "
        "Nothing in the run says the patch is gone until that error."
    )
    fix_safety = ("No autofix here: the finding names the command that re-applies the patch (`rlcompat fix --installed "
                  "verl --target sm61`, which keeps a new backup for another version), and `rlcompat restore verl` "
                  "undoes it.")
    sources = ("S99", "S50")
    prevents = ("X4",)

    bad = (
        Bad(_example("removed", files='unpatched = ["verl/utils/model.py"]'), path="env.toml"),
        Bad(_example("partly", files='patched = ["verl/workers/config/model.py"]\nunpatched = ["verl/utils/model.py"]'),
            path="env.toml"),
        Bad(_example("other-version", installed="0.9.2", files=""), path="env.toml"),
        Bad(_example("edited", files='edited = ["verl/utils/model.py"]'), target="sm75", path="env.toml"),
        Bad(PATCH.format(state="not-installed", installed="", files="").replace('installed_version = ""\n', ""),
            path="env.toml"),
    )
    good = (
        Good(_example("applied"), path="env.toml"),
        Good('[packages]\nverl = "0.9.1"\n', path="env.toml"),
    )

    def check(self, env):
        return [f for patch in env.installed_patches for f in self._check(patch)]

    def _check(self, p) -> list:
        name, old = p.dist, p.patched_version
        if p.state == "applied":
            return []
        if p.state in ("removed", "partly"):
            gone = "every patched file" if p.state == "removed" else f"{len(p.unpatched)} of {len(p.unpatched) + len(p.patched)} patched files"
            return [self.finding(
                f"the patch `rlcompat fix --installed` made to {name} {old} for {p.target} is gone from {gone} "
                f"({_some(p.unpatched)} hold their installed bytes again: a reinstall), so the hazards it fixed are back",
                error="X4", remedy=f"re-apply it: `{p.command}`")]
        if p.state == "other-version":
            return [self.finding(
                f"rlcompat patched {name} {old} for {p.target}, but {name} {p.installed_version} is installed now: the "
                f"patch went with that install", error="X4",
                remedy=f"patch this one: `{p.command}` (it replaces the backup of {old})")]
        if p.state == "not-installed":
            return [self.finding(
                f"rlcompat keeps a patch of {name} {old} for {p.target}, but {name} is no longer installed there",
                error="X4", severity="warning",
                remedy=f"after installing {name} again, `{p.command}`; or delete the backup: rm -r {p.folder or 'its folder'}")]
        if p.state == "edited":
            return [self.finding(
                f"{_some(p.edited)} of the {name} {old} rlcompat patched for {p.target} changed since (edited, or "
                f"removed)", error="X4", severity="warning",
                remedy=f"patch them again with `{p.command}`, or put the originals back with `rlcompat restore {name} "
                       f"--force`")]
        return []
