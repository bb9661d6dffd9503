"""InterPodAffinity: :mod:`.common` (terms and their counts), :mod:`.filtering` (PreFilter, Filter),
:mod:`.scoring` (PreScore, Score, NormalizeScore), :mod:`.encoding` (CP-SAT) and :mod:`.dry_run` (the
preemption world).

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/{filtering,plugin}.go`` and
``AffinityTerm`` in ``pkg/scheduler/framework/types.go``. A term selects pods by label selector within
namespaces: its ``namespaces`` list, or the pod's own namespace when neither the list nor a
namespaceSelector is given; the incoming pod's namespaceSelector is resolved to the namespaces it
matches (``{}`` keeps matching every namespace). Filter order and codes as upstream: the pod's required
affinity (UnschedulableAndUnresolvable; a pod that is the first of a self-affine series may go to any
node with the topology keys), the pod's required anti-affinity, then existing pods' required
anti-affinity against the pod (both Unschedulable). Counts are per topology pair (label key, value).

A term whose label or namespace selector cannot be built (``selectors.selector_error``) spoils its
whole list, as ``framework.NewPodInfo`` (v1.35 ``types.go``) parses it: a placed pod's list of that
kind is dropped, and a pod to schedule is rejected at PreFilter (UnschedulableAndUnresolvable,
``parsing pod: requiredAffinityTerms: <apimachinery's field error>``).
"""
