"""PodTopologySpread: :mod:`.common` (constraints and counts), :mod:`.filtering` (PreFilter, Filter),
:mod:`.scoring` (PreScore, Score, NormalizeScore), :mod:`.encoding` and :mod:`.excess` (CP-SAT), and
:mod:`.dry_run` (the preemption world).

Upstream (kubernetes v1.35.4), ``pkg/scheduler/framework/plugins/podtopologyspread/``:

* ``plugin.go``: the reasons, ``systemDefaultConstraints`` (in :mod:`optisched.profile.defaults`), and
  ``systemDefaulted`` (defaultingType System);
* ``common.go``: ``filterTopologySpreadConstraints`` (defaults: minDomains 1, nodeAffinityPolicy Honor,
  nodeTaintsPolicy Ignore; ``matchLabelKeys`` values merged into the selector by
  ``mergeLabelSetWithSelector`` while the MatchLabelKeysInPodTopologySpread gate is on (the profile's
  gates, :mod:`optisched.profile.gates`), a nil selector staying "nothing"), ``buildDefaultConstraints`` (the
  profile's defaults take the selector of :func:`default_selector`, replacing any merged keys; none when
  that selector is empty), ``nodeLabelsMatchSpreadConstraints`` (a node counts only when it carries the
  topology keys of *all* constraints), ``matchNodeInclusionPolicies`` and ``countPodsMatchSelector``
  (same namespace, terminating pods skipped, an empty selector counts nothing);
* ``filtering.go``: ``calPreFilterState`` counts matching pods per domain **per constraint** (since
  v1.33 a constraint's counts are its own even when two constraints share a key), over every node with
  all keys that passes that constraint's inclusion policies; the domains are the values of those nodes;
  ``minMatchNum`` is the smallest domain count, or 0 when there are fewer domains than ``minDomains``.
  ``Filter`` walks the constraints in order: a node without the key is UnschedulableAndUnresolvable
  ``(missing required label)``; ``count + selfMatch - min > maxSkew`` is Unschedulable.
  ``AddPod``/``RemovePod`` (nominated pods, preemption dry runs) move a domain's count by ±1 for a pod
  whose labels match, without the terminating and empty-selector exceptions of the PreFilter count;
* ``pkg/scheduler/framework/plugins/helper/spread.go``: ``DefaultSelector``.

Pods added to or removed from the snapshot after the cycle's PreFilter are applied to its counts as
``AddPod``/``RemovePod`` deltas (the rule keeps a log of snapshot changes), so Filter always answers
for the snapshot as it is now, as upstream's cloned, updated state does.

A hard constraint whose label selector cannot be built (``selectors.selector_error``) makes PreFilter
fail with an Error, as ``calPreFilterState`` does: the cycle ends without a FitError or preemption.
(A soft one fails PreScore the same way: :mod:`optisched.plugins.podtopologyspread.scoring`.)
"""
