"""The testbed: an emulated Kubernetes API, simulated apps, a fault library, scenarios, the
benchmark runner and a local Slack workspace. A product feature (demo, bench) and the stand-ins
the tests use."""
