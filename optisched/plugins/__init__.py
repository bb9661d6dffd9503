"""The scheduler's plugins, one home each (kube's ``pkg/scheduler/framework/plugins/<plugin>/``).

A plugin's module holds everything about it: its PreFilter/Filter and Score as greedy mode runs them,
its CP-SAT encoding with the fidelity it declares, the facts the engines read of it
(:class:`optisched.framework.Plugin`: the events it requeues on, whether it is static, its preemption
dry run) and, where a rule differs by Kubernetes release, each variant beside the other.
:mod:`.names` holds the plugin names; :mod:`optisched.registry` maps them to the classes.
"""
