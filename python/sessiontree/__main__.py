"""``python -m sessiontree``: the same as the ``sessiontree`` command."""

from sessiontree.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
