"""``python -m privopt``: the same entry as the ``privopt`` console script (``privopt.cli.run``),
for when the venv's ``bin`` folder is not on the PATH."""

from privopt.cli import run

if __name__ == "__main__":
    run()
