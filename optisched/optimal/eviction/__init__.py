"""Optimal mode's evictions: the batch's preemption rules (``batch``, ``preemptors``: who may preempt whom
as DefaultPreemption allows it), PodDisruptionBudgets in the model (``pdb_model``), and the fewest victims
for one pod (``minimal``)."""
