"""``python -m trn_backend.numpy_dispatch [--write docs/numpy.md]``: print the Markdown list of handled
functions and ufuncs, or replace the generated section of the docs page with it."""

import argparse
import pathlib

from . import BEGIN, END, markdown


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m trn_backend.numpy_dispatch", description=__doc__)
    parser.add_argument(
        "--write",
        type=pathlib.Path,
        metavar="FILE",
        help=f"replace the text between {BEGIN.strip()!r} and {END!r} in FILE",
    )
    args = parser.parse_args()
    if args.write is None:
        print(markdown(), end="")
        return
    text = args.write.read_text()
    if BEGIN not in text or END not in text:
        parser.error(f"{args.write} has no generated section (add the lines {BEGIN.strip()!r} and {END!r})")
    head, rest = text.split(BEGIN, 1)
    args.write.write_text(head + BEGIN + markdown() + END + rest.split(END, 1)[1])


main()
