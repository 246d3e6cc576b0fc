"""What rules ask of a parsed file, shared by rule families: where a Python expression sits (`pyhelpers`), how a
config value reads and is rewritten (`confighelpers`), which keys a framework version no longer reads
(`deadkeys`). Below rules/, above the front ends in rlcompat/lang/, which know no rule."""
