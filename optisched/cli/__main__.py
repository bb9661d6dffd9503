"""``python -m optisched.cli``: the same command line as the ``optisched`` console script."""
from optisched.cli import main

if __name__ == "__main__":
    main()
