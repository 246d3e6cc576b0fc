from rlcompat.cli import main

main()
