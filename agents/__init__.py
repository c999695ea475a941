"""The incident brain: state machine, detection, diagnosis, planning, the TNR transaction
engine, severity and policy; ports and the adapters that implement them."""
