"""DynamicResources: devices claimed through DRA (``resource.k8s.io/v1``), allocated by the structured allocator."""
