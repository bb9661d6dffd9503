"""``optisched generate``: a seeded synthetic cluster (:mod:`optisched.datasets.generate`)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..textsafe import safe
from . import common
from .options import seed_option


def generate(
    output: Annotated[Path, typer.Argument(help="Output file (.yaml or .json).")],
    nodes: Annotated[int, typer.Option(min=5, max=10_000)] = 20,
    pods: Annotated[int | None, typer.Option(help="Total pods (default 10 per node).")] = None,
    pending_fraction: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.5,
    load: Annotated[float, typer.Option(min=0.01, help="Total cpu requested / allocatable (1.2 = overloaded).")] = 0.8,
    zones: Annotated[int, typer.Option(min=1)] = 3,
    gpu_fraction: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.1,
    seed: Annotated[int, seed_option()] = 0,
    volumes: Annotated[bool, typer.Option(help="Give StatefulSets claims on zonal and local PVs "
                                               "(WaitForFirstConsumer classes, CSINode limits).")] = False,
    csi_limit: Annotated[int, typer.Option(min=0, help="With --volumes: CSI volumes each node attaches.")] = 25,
    dra: Annotated[bool, typer.Option(help="Publish the GPU nodes' GPUs (and some NICs) as DRA "
                                           "ResourceSlices and give GPU pods ResourceClaims instead of "
                                           "nvidia.com/gpu.")] = False,
) -> None:
    """Write a seeded synthetic cluster (same seed, same bytes)."""
    from ..datasets.dra import add_dra
    from ..datasets.generate import GenerateSpec, dump
    from ..datasets.generate import generate as gen
    from ..datasets.storage import VolumeSpec, add_volumes

    common.check_outputs({"OUTPUT": output})
    spec = GenerateSpec(nodes=nodes, pods=pods, pending_fraction=pending_fraction, load=load, zones=zones,
                        gpu_fraction=gpu_fraction, seed=seed)
    objs = gen(spec)
    if volumes:
        objs = add_volumes(objs, VolumeSpec(csi_limit=csi_limit), seed)
    if dra:
        objs = add_dra(objs, seed)
    fmt = "json" if output.suffix == ".json" else "yaml"
    if str(output) == "-":
        dump(objs, sys.stdout, fmt)
        return
    with open(output, "w", encoding="utf-8") as f:
        dump(objs, f, fmt)
    common.err.print(f"wrote {len(objs)} objects to {safe(output)}")
