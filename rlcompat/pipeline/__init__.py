"""The one pipeline of scan, fix and matrix: which files (discovery), each read once (source), checked by the
runner over every (rule set, target) group (runner, scanned_file), suppressions, fixes applied and re-parsed (fixer),
results cached by content (cache); matrix is the runner with one group per target."""
