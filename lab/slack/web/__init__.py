"""The workspace's web page: routes, per-user snapshots, and the static page itself."""
