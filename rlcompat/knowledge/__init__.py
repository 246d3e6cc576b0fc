"""What rlcompat knows, apart from the rules that apply it: the knowledge files under `data/` (GPU targets, minimum
capabilities, spellings, the precision policy, the machine's tables, verl's and other frameworks' keys) and one
typed loader per table. Every knowledge file is read through `files.load`; versions ("2.8.0+cu128") and
capabilities ("7.5") are parsed by `versions`. Importing this package imports nothing else."""
