"""Plans a person acts on, with kube-scheduler's answer to each step: where evicted pods land, replayed
by greedy mode (``landing``), and preemption plans (``plan``)."""
