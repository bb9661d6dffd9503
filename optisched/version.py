"""The Kubernetes release whose scheduler semantics optisched reproduces."""

KUBE_VERSION = "v1.35.4"
