"""kube's ``noderesources`` plugins: NodeResourcesFit (``fit``: its Filter and preemption world;
``scoring``: its LeastAllocated, MostAllocated and RequestedToCapacityRatio scores) and
NodeResourcesBalancedAllocation (``balanced_allocation``), on the shared request and allocatable
arithmetic of ``resource_allocation``."""
