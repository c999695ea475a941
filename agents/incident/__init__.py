"""The incident loop: the deterministic state machine that orders the agents (DESIGN
section 2), approvals, and the headless driver used by the demo, the bench and the tests."""
