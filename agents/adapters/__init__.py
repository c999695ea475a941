"""Adapters implementing the ports for real technologies (Kubernetes, Prometheus, Anthropic).
The only modules that import those SDKs."""
