"""The control plane's loops: each controller turns store changes into dirty keys and, when the
cluster reconciles, brings those objects towards their desired state through `KubeApi`, as
the real controllers do through the API server."""
