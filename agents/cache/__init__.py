"""Informer-style caches of the cluster: one list + watch per kind and namespace.

`reflector` is the loop (shared with the change journal's watch threads); `ClusterCache`
serves the read port from the stores it keeps current.
"""
