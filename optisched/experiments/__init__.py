"""Experiments: the FGD paper's GPU-sharing sweeps, its bound and its figures."""
