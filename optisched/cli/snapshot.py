"""``optisched snapshot``: a live cluster's objects saved as one List file, to repeat a run offline."""
from __future__ import annotations

from typing import Annotated

import typer

from . import common
from .options import ContextOpt, KubeconfigOpt


def snapshot(
    output: Annotated[str, typer.Option("--output", "-o", help="File to write (.yaml, or .json); - for stdout.")],
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output if it exists.")] = False,
) -> None:
    """Save what a live read sees (the kinds optisched reads, status included, never Secrets) as one List
    file, with the API server's version, so a run can be repeated offline: optisched compare FILE."""
    from ..model.live import check_snapshot_path, read_live, write_snapshot

    check_snapshot_path(output, kubeconfig, force)
    objects, version = read_live(kubeconfig, context)
    write_snapshot(objects, output, version=version)
    if output != "-":
        common.err.print(f"wrote {len(objects)} objects to {output}")
