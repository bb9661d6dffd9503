"""GPU sharing as the FGD paper's simulator runs it (hkust-adsl/kubernetes-scheduler-simulator): the
Open-Gpu-Share filter (``share``: the rule and its CP-SAT encoding; ``share_plugin``: the plugin) and the
placement policies as score plugins (``policies``: their registry; ``policy_plugin``: one score plugin per
policy; ``fgd``, ``best_fit``, ``dot_product``, ``packing``, ``clustering``, ``random_policy``)."""
